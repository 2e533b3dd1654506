/**
 * Learning across runs, through `createLoop({ store, learning })` with the scripted model and a virtual
 * clock: a flaky tool's weight falls run after run and recovers after its half-life, the order the model
 * is offered follows it, a failure streak carries the circuit breaker into the next run, task feedback
 * reaches the prompt, batches follow the window, and bad config or a corrupt record are handled.
 */
import { describe, expect, it } from 'vitest';
import { z } from 'zod';
import {
  createLoop,
  defineTool,
  evaluators,
  LoopConfigError,
  memoryStore,
  traceEventSchema,
  type LoopConfig,
  type Store,
  type TraceEvent,
} from 'loopstate';
import { reply, scriptedModel, toolCall, virtualClock, type VirtualClock } from 'loopstate/testing';
import { flaky, steady } from '../support/flaky-tools.js';

const HOUR = 3_600_000;

type Learning = NonNullable<LoopConfig['learning']>;

/** One run that calls `flaky` once (it fails), then answers. */
async function flakyRun(store: Store, clock: VirtualClock, learning: Learning = {}) {
  const model = scriptedModel([toolCall('flaky', {}), reply('done')]);
  const loop = createLoop({
    model,
    name: 'support-bot',
    tools: [flaky, steady],
    toolOrder: 'success_rate',
    store,
    clock,
    learning: { halfLifeMs: HOUR, ...learning },
  });
  const result = await loop.run({ goal: 'Use the tools.' });
  expect(result.stopReason).toBe('completed');
  return { result, model };
}

const eventsOf = <Type extends TraceEvent['type']>(trace: readonly TraceEvent[], type: Type) =>
  trace.filter((event): event is Extract<TraceEvent, { type: Type }> => event.type === type);

async function storedWeight(store: Store, tool: string): Promise<number | undefined> {
  const row = await store.readLearning('["support-bot",null]');
  return row === null
    ? undefined
    : (JSON.parse(row.body) as { tools: Record<string, { weight: number }> }).tools[tool]?.weight;
}

describe('learning across runs', () => {
  it("a flaky tool's weight falls across runs, moves it down the offered order, and recovers after its half-life", async () => {
    const store = memoryStore();
    const clock = virtualClock(1_000_000);
    const weights: number[] = [];
    for (let run = 0; run < 3; run++) {
      const { result, model } = await flakyRun(store, clock);
      weights.push((await storedWeight(store, 'flaky'))!);
      // The first request of each run is offered the tools in the order learned before it.
      const firstOrder = model.calls[0]?.tools.map((tool) => tool.name);
      expect(firstOrder).toEqual(run === 0 ? ['flaky', 'steady'] : ['steady', 'flaky']);
      const loaded = eventsOf(result.trace, 'learning-loaded');
      expect(loaded).toHaveLength(1);
      expect(loaded[0]?.version).toBe(run === 0 ? null : run);
      clock.advance(60_000);
    }
    // learningRate 0.2 (the default), one failure per batch: 1 → 0.8 → 0.64 → 0.512, less the fading between runs.
    expect(weights[0]).toBeCloseTo(0.8, 6);
    expect(weights[1]).toBeLessThan(weights[0]!);
    expect(weights[2]).toBeLessThan(weights[1]!);
    expect(weights[2]).toBeGreaterThan(0.5);
    // One half-life later the shortfall from 1 has halved; sixty later it is gone (below a double's precision).
    clock.advance(HOUR);
    const later = await flakyRun(store, clock);
    const loadedLater = eventsOf(later.result.trace, 'learning-loaded')[0]!;
    const flakyLoaded = loadedLater.tools.find((tool) => tool.name === 'flaky')!;
    expect(1 - flakyLoaded.weight).toBeCloseTo((1 - weights[2]!) * 0.5 ** ((HOUR + 60_000) / HOUR), 6);
    clock.advance(60 * HOUR);
    const recovered = await flakyRun(store, clock);
    const recoveredWeight = eventsOf(recovered.result.trace, 'learning-loaded')[0]!.tools.find(
      (tool) => tool.name === 'flaky',
    )!.weight;
    expect(recoveredWeight).toBe(1);
    // Weight 1 again: it is offered in its declared place.
    expect(recovered.model.calls[0]?.tools.map((tool) => tool.name)).toEqual(['flaky', 'steady']);
  });

  it('learningRate bounds how far one batch moves a weight', async () => {
    const store = memoryStore();
    const clock = virtualClock(0);
    await flakyRun(store, clock, { learningRate: 0.05 });
    expect(await storedWeight(store, 'flaky')).toBeCloseTo(0.95, 6);
  });

  it('records the weights a run started from and the update it wrote, in events the trace schema accepts', async () => {
    const store = memoryStore();
    const clock = virtualClock(0);
    await flakyRun(store, clock);
    const { result } = await flakyRun(store, clock);
    const loaded = eventsOf(result.trace, 'learning-loaded');
    const saved = eventsOf(result.trace, 'learning-saved');
    expect(loaded[0]).toMatchObject({ key: '["support-bot",null]', version: 1 });
    expect(loaded[0]?.tools).toEqual([
      { name: 'flaky', weight: 0.8, successes: 0, failures: 1, consecutiveFailures: 1 },
    ]);
    expect(saved).toHaveLength(1);
    expect(saved[0]).toMatchObject({
      version: 2,
      outcomes: 2, // the tool call and the evaluation of the answer
      tools: [{ name: 'flaky', successes: 0, failures: 1, weightBefore: 0.8 }],
      tasks: [{ id: 'main', passes: 1, failures: 0, passRateBefore: 1, passRateAfter: 1 }],
    });
    expect(saved[0]?.tools[0]?.weightAfter).toBeCloseTo(0.64, 6);
    // learning-saved comes before run-end, learning-loaded after run-start.
    const types = result.trace.map((event) => event.type);
    expect(types.indexOf('learning-loaded')).toBeGreaterThan(types.indexOf('run-start'));
    expect(types.indexOf('learning-saved')).toBeLessThan(types.indexOf('run-end'));
    for (const event of [...loaded, ...saved]) expect(traceEventSchema.safeParse(event).success).toBe(true);
  });

  it('carries a failure streak into the next run: the circuit opens there while it cools down', async () => {
    const store = memoryStore();
    const clock = virtualClock(0);
    // Run 1: two failures (threshold 3 is not reached).
    const first = createLoop({
      model: scriptedModel([toolCall('flaky', {}), toolCall('flaky', {}), reply('done')]),
      name: 'support-bot',
      tools: [flaky, steady],
      store,
      clock,
      learning: {},
    });
    expect((await first.run({ goal: 'go' })).stopReason).toBe('completed');
    // Run 2: one more failure makes three in a row across the runs: the tool is withheld from the next request.
    const model = scriptedModel([toolCall('flaky', {}), reply('done')]);
    const second = createLoop({ model, name: 'support-bot', tools: [flaky, steady], store, clock, learning: {} });
    const result = await second.run({ goal: 'go' });
    expect(result.stopReason).toBe('completed');
    expect(model.calls.map((call) => call.tools.map((tool) => tool.name))).toEqual([['flaky', 'steady'], ['steady']]);
    // Run 3 (same instant): it starts withheld.
    const third = scriptedModel([reply('done')]);
    await createLoop({ model: third, name: 'support-bot', tools: [flaky, steady], store, clock, learning: {} }).run({
      goal: 'go',
    });
    expect(third.calls[0]?.tools.map((tool) => tool.name)).toEqual(['steady']);
  });

  it('gives each task its pass rate and most frequent failure reasons in prompt({ goal, feedback })', async () => {
    const store = memoryStore();
    const clock = virtualClock(0);
    const prompts: unknown[] = [];
    const make = (replies: string[]) =>
      createLoop({
        model: scriptedModel(replies.map((text) => reply(text))),
        name: 'reporter',
        store,
        clock,
        learning: {},
        limits: { maxRetries: 3 },
        tasks: [
          {
            id: 'draft',
            prompt: ({ goal, feedback }) => {
              prompts.push(feedback);
              const reasons = feedback?.topFailureReasons.map((entry) => entry.reason) ?? [];
              return reasons.length === 0 ? goal : `${goal}\nOften wrong before: ${reasons.join('; ')}`;
            },
            evaluate: [evaluators.rule((output: string) => output.includes('total'), 'missing the total')],
          },
        ],
      });
    // Run 1: two rejected drafts, then a good one.
    await make(['draft one', 'draft two', 'a total of 3']).run({ goal: 'Write the report' });
    expect(prompts[0]).toEqual({ passRate: 1, evaluations: 0, topFailureReasons: [] });
    const secondModel = scriptedModel([reply('a total of 4')]);
    const second = createLoop({ ...make([]).config, model: secondModel });
    await second.run({ goal: 'Write the report' });
    const feedback = prompts[1] as { passRate: number; evaluations: number; topFailureReasons: { reason: string }[] };
    expect(feedback.evaluations).toBe(3);
    // One batch of 1 pass in 3: 1 + 0.2 × (1/3 − 1).
    expect(feedback.passRate).toBeCloseTo(1 + 0.2 * (1 / 3 - 1), 6);
    expect(feedback.topFailureReasons.map((entry) => entry.reason)).toEqual([
      expect.stringContaining('missing the total'),
    ]);
    expect(secondModel.calls[0]?.messages.at(-1)?.content).toContain('Often wrong before:');
  });

  it('writes a batch every batchWindow.outcomes outcomes, and the rest at the end of the run', async () => {
    const store = memoryStore();
    const clock = virtualClock(0);
    const counter = defineTool({
      name: 'counter',
      description: 'Counts.',
      input: z.object({ n: z.number() }),
      access: 'read',
      execute: ({ n }) => `seen ${n}`,
    });
    const model = scriptedModel([1, 2, 3, 4, 5].map((n) => toolCall('counter', { n })).concat(reply('done')));
    // Outcomes are written once their events are committed: a commit before every model call (not grouped).
    const loop = createLoop({
      model,
      tools: [counter],
      store,
      clock,
      learning: { batchWindow: { outcomes: 2 } },
      durable: { maxUncommittedSteps: 1 },
    });
    const result = await loop.run({ goal: 'go' });
    expect(result.stopReason).toBe('completed');
    const saved = eventsOf(result.trace, 'learning-saved');
    // 5 tool outcomes and 1 evaluation: 2 + 2, then 2 at the end.
    expect(saved.map((event) => event.outcomes)).toEqual([2, 2, 2]);
    expect(saved.map((event) => event.version)).toEqual([1, 2, 3]);
    const row = await store.readLearning('["loopstate",null]');
    expect(JSON.parse(row!.body).tools.counter.successes).toBe(5);
  });

  it('writes a batch once batchWindow.ms has passed on the loop clock', async () => {
    const store = memoryStore();
    const clock = virtualClock(0);
    const slow = defineTool({
      name: 'slow',
      description: 'Takes a minute.',
      input: z.object({ n: z.number() }),
      access: 'read',
      execute: ({ n }) => {
        clock.advance(60_000);
        return `done ${n}`;
      },
    });
    const model = scriptedModel([toolCall('slow', { n: 1 }), toolCall('slow', { n: 2 }), reply('done')]);
    const loop = createLoop({
      model,
      tools: [slow],
      store,
      clock,
      learning: { batchWindow: { ms: 30_000 } },
      limits: { deadlineMs: Infinity },
      // Outcomes are written once their events are committed: a commit before every model call (not grouped).
      durable: { maxUncommittedSteps: 1 },
    });
    const result = await loop.run({ goal: 'go' });
    expect(result.stopReason).toBe('completed');
    const saved = eventsOf(result.trace, 'learning-saved');
    expect(saved.map((event) => event.outcomes)).toEqual([1, 1, 1]);
  });

  it('keeps learning per loop name and per tenant', async () => {
    const store = memoryStore();
    const clock = virtualClock(0);
    const run = (name: string, tenant?: string) =>
      createLoop({
        model: scriptedModel([toolCall('flaky', {}), reply('done')]),
        name,
        tools: [flaky],
        store,
        clock,
        learning: {},
        ...(tenant === undefined ? {} : { tenant: { id: tenant } }),
      }).run({ goal: 'go' });
    await run('a');
    await run('a', 'acme');
    await run('b');
    expect((await store.listLearning()).map((row) => row.key)).toEqual(['["a","acme"]', '["a",null]', '["b",null]']);
  });

  it('warns about a corrupt record, runs from nothing learned, and leaves the record as it was', async () => {
    const store = memoryStore();
    await store.writeLearning('["support-bot",null]', '{"schemaVersion":1,"kind":"learning","tools":7}', null);
    const { result } = await flakyRun(store, virtualClock(0));
    expect(result.warnings.join('\n')).toMatch(
      /learning: the run starts from nothing learned \(LearningRecordError: Refused the learning record \["support-bot",null\]: .*tools/,
    );
    expect(result.warnings.join('\n')).toContain('loopstate learning reset');
    expect(eventsOf(result.trace, 'learning-loaded')[0]).toMatchObject({
      version: null,
      problem: expect.stringContaining('tools'),
    });
    expect(eventsOf(result.trace, 'learning-saved')).toEqual([]);
    expect((await store.readLearning('["support-bot",null]'))?.body).toBe(
      '{"schemaVersion":1,"kind":"learning","tools":7}',
    );
  });

  it('refuses a record of a newer schema version by name, and runs', async () => {
    const store = memoryStore();
    await store.writeLearning('["support-bot",null]', '{"schemaVersion":99}', null);
    const { result } = await flakyRun(store, virtualClock(0));
    expect(result.warnings.join('\n')).toMatch(/schemaVersion 99 is newer/);
  });

  it('warns and completes when the store fails to read or write learning', async () => {
    const inner = memoryStore();
    const store: Store = {
      ...inner,
      readLearning: async () => {
        throw new Error('disk on fire');
      },
    };
    const { result } = await flakyRun(store, virtualClock(0));
    expect(result.warnings.join('\n')).toMatch(/learning: the run starts from nothing learned \(.*disk on fire/);
    expect(result.warnings.join('\n')).toMatch(
      /learning: a batch of 2 outcomes was not saved to \["support-bot",null\]: .*disk on fire/,
    );
  });

  it('is off by default: no learning events, nothing stored', async () => {
    const store = memoryStore();
    const loop = createLoop({ model: scriptedModel([toolCall('flaky', {}), reply('done')]), tools: [flaky], store });
    const result = await loop.run({ goal: 'go' });
    expect(result.trace.some((event) => event.type.startsWith('learning'))).toBe(false);
    expect(await store.listLearning()).toEqual([]);
  });
});

describe('learning config', () => {
  const issuesOf = (config: Partial<LoopConfig>) => {
    try {
      createLoop({ model: scriptedModel([]), ...config } as LoopConfig);
    } catch (error) {
      expect(error).toBeInstanceOf(LoopConfigError);
      return (error as LoopConfigError).issues.map((issue) => `${issue.path}: ${issue.message}`);
    }
    throw new Error('expected a LoopConfigError');
  };

  it('needs a store, and is not taken with toolHealth', async () => {
    expect(issuesOf({ learning: {} })).toEqual([expect.stringMatching(/^learning: learning is kept in the store/)]);
    const { ToolHealth } = await import('loopstate');
    expect(issuesOf({ learning: {}, store: memoryStore(), toolHealth: new ToolHealth() })).toEqual([
      expect.stringMatching(/^learning: .*not both/),
    ]);
  });

  it.each([
    [{ learningRate: 0 }, 'learning.learningRate'],
    [{ learningRate: 1.5 }, 'learning.learningRate'],
    [{ learningRate: Number.NaN }, 'learning.learningRate'],
    [{ halfLifeMs: -1 }, 'learning.halfLifeMs'],
    [{ halfLifeMs: 0 }, 'learning.halfLifeMs'],
    [{ batchWindow: { outcomes: 0 } }, 'learning.batchWindow.outcomes'],
    [{ batchWindow: { outcomes: 1.5 } }, 'learning.batchWindow.outcomes'],
    [{ batchWindow: { ms: -5 } }, 'learning.batchWindow.ms'],
    [{ topReasons: -1 }, 'learning.topReasons'],
    [{ rate: 0.1 }, 'learning.rate'],
  ])('names the bad field: %j', (learning, path) => {
    const issues = issuesOf({ learning: learning as Learning, store: memoryStore() });
    expect(issues).toEqual([expect.stringMatching(new RegExp(`^${path.replace(/\./g, '\\.')}: `))]);
  });

  it('takes undefined as the default and Infinity as never forgetting', () => {
    expect(() =>
      createLoop({
        model: scriptedModel([]),
        store: memoryStore(),
        learning: { learningRate: undefined, halfLifeMs: Infinity, batchWindow: { ms: Infinity, outcomes: undefined } },
      }),
    ).not.toThrow();
  });
});

describe('learning and redaction', () => {
  it('stores failure reasons redacted: a secret the output quoted never reaches the store or a later prompt', async () => {
    const store = memoryStore();
    const secret = 'sk-live-0123456789abcdefghijklmnop';
    const seen: string[] = [];
    const make = (answers: string[]) =>
      createLoop({
        model: scriptedModel(answers.map((text) => reply(text))),
        name: 'leaky',
        store,
        clock: virtualClock(0),
        learning: {},
        tasks: [
          {
            id: 'answer',
            prompt: ({ goal, feedback }) => {
              seen.push(JSON.stringify(feedback));
              return goal;
            },
            evaluate: [
              {
                name: 'no keys',
                kind: 'rule' as const,
                evaluate: ({ output }: { output: string }) =>
                  output.includes('sk-')
                    ? { passed: false, reason: `leaked ${output}`, parsed: null }
                    : { passed: true, reason: '', parsed: output },
              },
            ],
          },
        ],
      });
    await make([`the key is ${secret}`, 'fine']).run({ goal: 'go' });
    await make(['fine']).run({ goal: 'go' });
    const body = (await store.readLearning('["leaky",null]'))!.body;
    expect(body).not.toContain(secret);
    expect(body).toContain('leaked the key is');
    expect(seen.join('\n')).not.toContain(secret);
  });
});
