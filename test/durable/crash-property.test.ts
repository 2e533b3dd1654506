/**
 * Property: a run interrupted at a random effect (its model or tool call never settles, as if the process
 * died there, with whatever the journal had not committed yet lost) and resumed by a second loop on the
 * same store ends with the transcript, trace, usage, output and side effects of a run that was never
 * interrupted. The next model request after the resume is the uninterrupted run's own, message for message.
 */
import fc from 'fast-check';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { z } from 'zod';
import { createLoop, defineTool, memoryStore, type Model, type ModelRequest, type Store } from 'loopstate';
import { sqliteStore } from 'loopstate/sqlite';
import { virtualClock } from 'loopstate/testing';
import { freeLease } from './dead-owner.js';

const scratch = mkdtempSync(join(tmpdir(), 'loopstate-crash-property-'));
afterAll(() => rmSync(scratch, { recursive: true, force: true }));

/** What happened in the world outside the run: every effect a tool applied, by idempotency key. */
interface World {
  effects: Map<string, number>;
  /** Effects counted so far, model calls and tool calls alike: the interruption comes at number `hangAt`. */
  calls: number;
}

interface Scenario {
  steps: number;
  /** Per step, which tools the model calls (1 or 2 calls, parallel when 2). */
  rounds: ('lookup' | 'charge')[][];
  snapshotEvery: number;
  /** A context ceiling (trim): the conversation is cut, and the transcript chunks replace it. */
  ceiling: number | null;
  traceInMemory: boolean;
}

/** The step a request is at: after the last tool result's step (the conversation may be trimmed: not by counting). */
const stepOf = (request: ModelRequest): number => {
  const last = [...request.messages].reverse().find((message) => message.role === 'tool');
  return last === undefined ? 0 : Number(/(?:record|charged) (\d+)\./.exec(last.content)?.[1] ?? -1) + 1;
};

/** One "process": a loop on `store` whose `hangAt`-th call (model or tool) never settles. */
function process(store: Store, scenario: Scenario, world: World, hangAt: number | null, requests: ModelRequest[]) {
  let hung: () => void = () => undefined;
  const reached = new Promise<void>((resolve) => (hung = resolve));
  const hangsNow = () => world.calls++ === hangAt;
  const never = () => {
    hung();
    return new Promise<never>(() => undefined);
  };
  // Answers by the replies already in the conversation, as a provider answers the same conversation the same way.
  const model: Model = {
    id: 'scripted',
    async generate(request) {
      if (hangsNow()) return never();
      requests.push(request);
      const given = stepOf(request);
      const usage = { inputTokens: 10 + given, outputTokens: 3 };
      const round = scenario.rounds[given];
      if (given >= scenario.steps - 1 || round === undefined)
        return { text: `done after ${given}`, toolCalls: [], usage };
      return {
        text: null,
        toolCalls: round.map((name, index) => ({
          id: `c${given}_${index}`,
          name,
          arguments: JSON.stringify({ id: `${given}.${index}` }),
        })),
        usage,
      };
    },
  };
  const apply = (key: string) => world.effects.set(key, (world.effects.get(key) ?? 0) + 1);
  const lookup = defineTool({
    name: 'lookup',
    description: 'Read a record',
    input: z.object({ id: z.string() }),
    access: 'read',
    idempotent: true,
    execute: async ({ id }, { idempotencyKey }) => {
      if (hangsNow()) return never();
      apply(`lookup:${idempotencyKey}`);
      return `record ${id}`;
    },
  });
  // Not idempotent: settled through checkOutcome when interrupted; it applies its effect before it hangs.
  const charge = defineTool({
    name: 'charge',
    description: 'Charge a fee',
    input: z.object({ id: z.string() }),
    access: 'write',
    execute: async ({ id }, { idempotencyKey }) => {
      apply(`charge:${idempotencyKey}`);
      if (hangsNow()) return never();
      return `charged ${id}`;
    },
    checkOutcome: async ({ id }, { idempotencyKey }) =>
      world.effects.has(`charge:${idempotencyKey}`)
        ? { status: 'done' as const, result: `charged ${id}` }
        : { status: 'not_done' as const },
  });
  const loop = createLoop({
    model,
    tools: [lookup, charge],
    clock: virtualClock(),
    random: () => 0.5,
    store,
    durable: { snapshotEvery: scenario.snapshotEvery },
    policy: { allow: ['read', 'write'] },
    limits: { maxSteps: scenario.steps + 2 },
    noProgress: { unchangedState: 1_000 },
    trace: { inMemory: scenario.traceInMemory },
    ...(scenario.ceiling === null ? {} : { context: { maxInputTokensPerCall: scenario.ceiling, keepTurns: 1 } }),
  });
  return { loop, reached };
}

/** Effects counted once per key, lookups included: an idempotent lookup may run again after an interruption. */
const charges = (world: World) => [...world.effects].filter(([key]) => key.startsWith('charge:'));

const scenarioArbitrary = fc
  .record({
    steps: fc.integer({ min: 2, max: 9 }),
    rounds: fc.array(fc.array(fc.constantFrom('lookup' as const, 'charge' as const), { minLength: 1, maxLength: 2 }), {
      minLength: 8,
      maxLength: 8,
    }),
    snapshotEvery: fc.integer({ min: 1, max: 6 }),
    ceiling: fc.option(fc.constantFrom(200, 260), { nil: null }),
    traceInMemory: fc.boolean(),
    hangIndex: fc.nat({ max: 10_000 }),
    sqlite: fc.boolean(),
  })
  .map(({ hangIndex, sqlite, ...scenario }) => ({ scenario, hangIndex, sqlite }));

let databases = 0;
let trimmedRuns = 0;

describe('a run interrupted at a random effect and resumed', () => {
  it('ends with the transcript, usage, output and side effects of the uninterrupted run', async () => {
    await fc.assert(
      fc.asyncProperty(scenarioArbitrary, async ({ scenario, hangIndex, sqlite }) => {
        const reference: World = { effects: new Map(), calls: 0 };
        const referenceRequests: ModelRequest[] = [];
        const expected = await process(memoryStore(), scenario, reference, null, referenceRequests).loop.run({
          goal: 'work',
          runId: 'run',
        });
        expect(expected.stopReason).toBe('completed');
        expect(reference.calls).toBeGreaterThan(scenario.steps - 1);
        // A request shorter than the one before it: the ceiling trimmed the conversation.
        if (
          referenceRequests.some(
            (request, at) => request.messages.length < (referenceRequests[at - 1]?.messages.length ?? 0),
          )
        )
          trimmedRuns += 1;

        const store = sqlite ? sqliteStore({ path: join(scratch, `run-${databases++}.db`) }) : memoryStore();
        const world: World = { effects: new Map(), calls: 0 };
        const hangAt = hangIndex % reference.calls;
        const first = process(store, scenario, world, hangAt, []);
        void first.loop.run({ goal: 'work', runId: 'run' });
        await first.reached;
        await freeLease(store, 'run');
        const requests: ModelRequest[] = [];
        const result = await process(store, scenario, world, null, requests).loop.resume('run');
        await store.close();

        expect(result.stopReason).toBe('completed');
        expect(result.messages).toEqual(expected.messages);
        expect(result.usage).toEqual(expected.usage);
        expect(result.output).toEqual(expected.output);
        expect(result.steps).toBe(expected.steps);
        // The in-memory trace too, put back from its chunks and the replayed events (the resume's own event aside).
        expect(result.trace.filter((event) => event.type !== 'run-resume')).toEqual(expected.trace);
        // Every charge applied exactly once; every lookup the uninterrupted run made, made.
        expect(charges(world)).toEqual(charges(reference).map(([key]) => [key, 1]));
        expect([...world.effects.keys()].sort()).toEqual([...reference.effects.keys()].sort());
        // The first request after the resume is the uninterrupted run's request at that point, exactly.
        const next = requests[0];
        if (next !== undefined) {
          const same = referenceRequests.find((request) => stepOf(request) === stepOf(next));
          expect(next.messages).toEqual(same?.messages);
        }
      }),
      { numRuns: 60, seed: 18 },
    );
    // The ceiling's case is exercised, not only drawn.
    expect(trimmedRuns).toBeGreaterThan(5);
  }, 120_000);
});
