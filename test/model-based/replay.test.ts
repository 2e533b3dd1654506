/**
 * The exploration's shortest paths, replayed against the real runtime: for every configuration, one
 * shortest path per reachable final state (all of them), driven through `createLoop` by the replay
 * harness, must take the same route and end with the output the machine computed for that state.
 */
import { afterAll, describe, expect, it } from 'vitest';
import { z } from 'zod';
import { createLoop, defineTool } from 'loopstate';
import { scriptedModel, toolCall, virtualClock } from 'loopstate/testing';
import { MODEL_CONFIGURATIONS } from './abstract-events.js';
import { exploreLoopGraph, shortestPathsOf } from './loop-graph.js';
import { createReplayHarness, SKIP_REASONS } from './replay-harness.js';

/** At most this many disagreements are quoted in a failure message. */
const QUOTED = 5;

interface ReplayFigures {
  name: string;
  finalPaths: number;
  replayed: number;
  agreed: number;
  skipped: Map<string, number>;
}

const figures: ReplayFigures[] = [];

function describeSkips(skipped: ReadonlyMap<string, number>): string {
  return skipped.size === 0 ? 'none' : [...skipped].map(([reason, count]) => `${count} (${reason})`).join('; ');
}

describe.each(MODEL_CONFIGURATIONS)('replay against the runtime, $name', (config) => {
  it("drives createLoop along every shortest path to a final state, with the machine's route and output", async () => {
    const paths = shortestPathsOf(exploreLoopGraph(config)).filter((path) => path.state.status === 'done');
    const harness = createReplayHarness(config);
    const tally: ReplayFigures = {
      name: config.name,
      finalPaths: paths.length,
      replayed: 0,
      agreed: 0,
      skipped: new Map(),
    };
    const disagreements: string[] = [];
    for (const path of paths) {
      const verdict = await harness.replay(path);
      if (verdict.status === 'skipped') {
        tally.skipped.set(verdict.reason, (tally.skipped.get(verdict.reason) ?? 0) + 1);
        continue;
      }
      tally.replayed += 1;
      if (verdict.status === 'agreed') tally.agreed += 1;
      else
        disagreements.push(
          `${path.steps.map((step) => step.label).join(' > ')}\n    ${verdict.problems.join('\n    ')}`,
        );
    }
    figures.push(tally);
    console.log(
      `[replay] ${config.name}: ${tally.finalPaths} final-state paths, replayed ${tally.replayed}, agreed ${tally.agreed}, ` +
        `skipped ${tally.finalPaths - tally.replayed}: ${describeSkips(tally.skipped)}`,
    );
    expect(disagreements.slice(0, QUOTED), `${disagreements.length} path(s) disagree`).toEqual([]);
    // Only paths that begin before the run starts cannot be produced: one per interruption. (A path that asks a
    // reply repeated verbatim for a round its call cannot bring would be skipped as `unactable`: none is.)
    expect([...tally.skipped.keys()].every((reason) => reason === SKIP_REASONS.beforeStart)).toBe(true);
    expect(tally.finalPaths - tally.replayed).toBeLessThanOrEqual(3);
    // Thousands of full runs: ~10 s alone on two cores, so a loaded machine gets room beyond the 20 s default.
  }, 90_000);
});

afterAll(() => {
  const total = figures.reduce(
    (sum, entry) => ({
      finalPaths: sum.finalPaths + entry.finalPaths,
      replayed: sum.replayed + entry.replayed,
      agreed: sum.agreed + entry.agreed,
    }),
    { finalPaths: 0, replayed: 0, agreed: 0 },
  );
  const skipped = new Map<string, number>();
  for (const entry of figures)
    for (const [reason, count] of entry.skipped) skipped.set(reason, (skipped.get(reason) ?? 0) + count);
  console.log(
    `[replay] all configurations: ${total.finalPaths} final-state paths, replayed ${total.replayed}, agreed ${total.agreed}, ` +
      `skipped ${total.finalPaths - total.replayed}: ${describeSkips(skipped)}`,
  );
});

describe('known defects (reported, not fixed here: flip to `it` once fixed)', () => {
  // A policy hook that throws while the driver classifies the reply turns into run.faulted, which carries
  // no usage: the model call was made (and paid for) but neither its tokens, its cost nor the call are counted.
  it('counts the model call whose reply made the policy hook throw', async () => {
    const model = scriptedModel([toolCall('lookup', { id: 'a' }, { usage: { inputTokens: 500, outputTokens: 50 } })]);
    const lookup = defineTool({
      name: 'lookup',
      description: 'Looks a record up',
      input: z.object({ id: z.string() }),
      access: 'read',
      execute: () => 'found',
    });
    const policy = {
      decide: () => {
        throw new Error('policy store unreachable');
      },
    };
    const loop = createLoop({ model, tools: [lookup], policy, clock: virtualClock() });
    const result = await loop.run({ goal: 'Look record a up.' });
    expect(result.stopReason).toBe('fatal_error');
    expect(result.usage).toMatchObject({ modelCalls: model.calls.length, inputTokens: 500, outputTokens: 50 });
  });
});
