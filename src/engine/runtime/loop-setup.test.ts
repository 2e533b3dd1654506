/**
 * A loop's run-independent facts are worked out once and shared by its runs; what is a run's own (goal,
 * messages, run id, signal) never leaks into another run, sequential or concurrent.
 */
import { describe, expect, it, vi } from 'vitest';
import { createActor } from 'xstate';
import { loopMachine, type LoopSnapshot } from '../../../machines/index.js';
import { z } from 'zod';
import { createLoop, defineTool, evaluators, type Model, type ModelRequest } from 'loopstate';
import { resolveConfig } from '../config/config.js';
import { scriptedModel } from '../../testing/index.js';
import { loopSetupOf, toolSpecChars } from './loop-setup.js';

const lookup = defineTool({
  name: 'lookup',
  description: 'Look a key up.',
  input: z.object({ key: z.string() }),
  access: 'read',
  execute: ({ key }) => `value of ${key}`,
});

/** Answers from the request alone: one lookup of the goal's first word, then the goal back as JSON. */
function echoModel(requests: ModelRequest[], delay: () => Promise<void> = async () => undefined): Model {
  return {
    id: 'gpt-4.1-mini',
    async generate(request) {
      requests.push(request);
      await delay();
      const goal = request.messages.find((message) => message.role === 'user')?.content ?? '';
      const last = request.messages[request.messages.length - 1];
      if (last?.role !== 'tool')
        return {
          text: null,
          toolCalls: [{ id: 'c1', name: 'lookup', arguments: JSON.stringify({ key: goal.split(' ')[0] }) }],
          usage: { inputTokens: 10, outputTokens: 5 },
        };
      return {
        text: JSON.stringify({ goal, seen: last.content }),
        toolCalls: [],
        usage: { inputTokens: 10, outputTokens: 5 },
      };
    },
  };
}

describe('loopSetupOf', () => {
  it('is worked out once per resolved config, and again for another one', () => {
    const config = resolveConfig({ model: scriptedModel([]), tools: [lookup], limits: { maxSteps: 7 } });
    const setup = loopSetupOf(config);
    expect(loopSetupOf(config)).toBe(setup);
    expect(loopSetupOf({ ...config })).not.toBe(setup);
    expect(setup.machineInput.limits.maxSteps).toBe(7);
    expect(setup.machineInput.tasks).toEqual([{ id: 'main', onFailure: 'stop', evaluated: false }]);
    expect(setup.tracedLimits.maxSteps).toBe(7);
    expect(setup.toolFacts(config.tools).specChars).toBe(toolSpecChars(config.tools));
  });

  it('plans the tasks of a workflow with their own evaluators', () => {
    const config = resolveConfig({
      model: scriptedModel([]),
      evaluate: evaluators.json(),
      tasks: [
        { id: 'classify', prompt: 'Classify.', evaluate: [] },
        { id: 'draft', prompt: 'Draft.', onFailure: 'continue' },
      ],
    });
    expect(loopSetupOf(config).machineInput.tasks).toEqual([
      { id: 'classify', onFailure: 'stop', evaluated: false },
      { id: 'draft', onFailure: 'continue', evaluated: true },
    ]);
  });
});

describe('the kept initial snapshot', () => {
  /** What a run's actor starts in, as the driver makes it (restored) or as XState would (fresh). */
  const started = (config: ReturnType<typeof resolveConfig>, restored: boolean): LoopSnapshot => {
    const setup = loopSetupOf(config);
    const actor = restored ? setup.createRunActor() : createActor(loopMachine, { input: setup.machineInput });
    actor.start();
    const snapshot = actor.getSnapshot();
    actor.stop();
    return snapshot;
  };
  const facts = (snapshot: LoopSnapshot) => ({
    value: snapshot.value,
    status: snapshot.status,
    context: snapshot.context,
    children: snapshot.children,
    historyValue: snapshot.historyValue,
    tags: [...snapshot.tags],
    output: snapshot.output,
    error: snapshot.error,
    persisted: actorPersisted(snapshot),
  });
  const actorPersisted = (snapshot: LoopSnapshot) => loopMachine.getPersistedSnapshot(snapshot);

  it.each([
    ['a single task', { limits: { maxSteps: 7 } }],
    [
      'a workflow with its own limits and thresholds',
      {
        evaluate: evaluators.json(),
        limits: { maxSteps: 3, deadlineMs: 5_000 },
        noProgress: { repeatedToolCall: 2 },
        tasks: [
          { id: 'classify', prompt: 'Classify.', evaluate: [] },
          { id: 'draft', prompt: 'Draft.', onFailure: 'continue' as const },
        ],
      },
    ],
  ])('restores what a fresh actor starts in: %s', (_name, options) => {
    const config = resolveConfig({ model: scriptedModel([]), tools: [lookup], ...options });
    expect(facts(started(config, true))).toEqual(facts(started(config, false)));
    expect(started(config, true).context.limits).toBe(config.limits);
  });

  it("is each loop's own, and gives each run a context of its own", () => {
    const seven = resolveConfig({ model: scriptedModel([]), limits: { maxSteps: 7 } });
    const two = resolveConfig({ model: scriptedModel([]), limits: { maxSteps: 2 } });
    const [a, b] = [loopSetupOf(seven).createRunActor(), loopSetupOf(seven).createRunActor()].map((actor) =>
      actor.getSnapshot(),
    );
    expect(a?.context).not.toBe(b?.context);
    expect(a?.context.usage).not.toBe(b?.context.usage);
    // The state itself is the loop's, worked out once: each run's actor copies it.
    expect(a?._nodes).toBe(b?._nodes);
    expect(a).not.toBe(b);
    expect(started(seven, true).context.limits.maxSteps).toBe(7);
    expect(started(two, true).context.limits.maxSteps).toBe(2);
  });

  it("copies the loop's kept state into a new run's actor: XState restores nothing a run", async () => {
    const restore = vi.spyOn(loopMachine, 'restoreSnapshot');
    try {
      const loop = createLoop({ model: echoModel([]), tools: [lookup], evaluate: evaluators.json() });
      const results = [await loop.run({ goal: 'alpha one' }), await loop.run({ goal: 'beta two' })];
      expect(results.map((result) => result.stopReason)).toEqual(['completed', 'completed']);
      // Once for the loop (its first run), never again.
      expect(restore).toHaveBeenCalledTimes(1);
    } finally {
      restore.mockRestore();
    }
  });

  it('shares only frozen parts: a write to the kept state throws instead of reaching the next run', () => {
    const config = resolveConfig({ model: scriptedModel([]), limits: { maxSteps: 7 } });
    const snapshot = loopSetupOf(config).createRunActor().getSnapshot();
    expect(() => (snapshot._nodes as unknown[]).push(null)).toThrow(TypeError);
    expect(() => Object.assign(snapshot.children, { child: null })).toThrow(TypeError);
    expect(() => Object.assign(snapshot.historyValue, { history: [] })).toThrow(TypeError);
    // The snapshot object and its context are the run's own.
    expect(Object.isFrozen(snapshot)).toBe(false);
    expect(Object.isFrozen(snapshot.context)).toBe(false);
  });

  it('keeps two loops apart: each run stops by its own loop limits, interleaved', async () => {
    const requests: ModelRequest[] = [];
    const oneStep = createLoop({ model: echoModel(requests), tools: [lookup], limits: { maxSteps: 1 } });
    const free = createLoop({ model: echoModel(requests), tools: [lookup], evaluate: evaluators.json() });
    const results = [];
    for (const loop of [oneStep, free, oneStep, free]) results.push(await loop.run({ goal: 'alpha one' }));
    expect(results.map((result) => result.stopReason)).toEqual(['max_steps', 'completed', 'max_steps', 'completed']);
    expect(results.map((result) => result.steps)).toEqual([1, 2, 1, 2]);
    // A run's usage is its own object: one run's result never moves with another's.
    expect(results[0]?.usage).not.toBe(results[2]?.usage);
    expect(results[0]?.usage).toEqual(results[2]?.usage);
  });
});

describe('runs of one loop', () => {
  it('share the prompt version and limits, never their goal, run id, messages or trace', async () => {
    const requests: ModelRequest[] = [];
    const loop = createLoop({ model: echoModel(requests), tools: [lookup], evaluate: evaluators.json() });
    const first = await loop.run({ goal: 'alpha one', runId: 'run_a' });
    const second = await loop.run({
      goal: 'beta two',
      runId: 'run_b',
      messages: [
        { role: 'user', content: 'earlier question' },
        { role: 'assistant', content: 'earlier answer' },
      ],
    });
    expect(first.output).toEqual({ goal: 'alpha one', seen: 'value of alpha' });
    expect(second.output).toEqual({ goal: 'earlier question', seen: 'value of earlier' });
    expect(second.messages.some((message) => message.content === 'alpha one')).toBe(false);
    expect(first.messages.some((message) => message.content === 'earlier answer')).toBe(false);
    const starts = [first, second].map((result) => result.trace.find((event) => event.type === 'run-start'));
    expect(starts.map((start) => start?.runId)).toEqual(['run_a', 'run_b']);
    expect(starts[0]?.type === 'run-start' && starts[0].goalSummary).toContain('alpha');
    expect(starts[1]?.type === 'run-start' && starts[1].goalSummary).toContain('beta');
    const [a, b] = starts.map((start) => (start?.type === 'run-start' ? start : undefined));
    expect(a?.promptVersion).toBe(b?.promptVersion);
    expect(a?.limits).toEqual(b?.limits);
    // Each run's event is its own: changing one run's trace changes nothing in the next.
    expect(a?.limits).not.toBe(b?.limits);
    expect(first.trace.every((event) => event.runId === 'run_a')).toBe(true);
    expect(second.trace.every((event) => event.runId === 'run_b')).toBe(true);
  });

  it('run concurrently on one loop, each with its own inputs and signal', async () => {
    const requests: ModelRequest[] = [];
    const loop = createLoop({
      model: echoModel(requests, () => new Promise((resolve) => setTimeout(resolve, 1))),
      tools: [lookup],
      evaluate: evaluators.json(),
    });
    const cancelled = new AbortController();
    const goals = Array.from({ length: 20 }, (_, index) => `goal${index} task`);
    const runs = goals.map((goal, index) =>
      loop.run({ goal, runId: `run_${index}`, ...(index === 7 ? { signal: cancelled.signal } : {}) }),
    );
    cancelled.abort();
    const results = await Promise.all(runs);
    results.forEach((result, index) => {
      expect(result.runId).toBe(`run_${index}`);
      expect(result.trace.every((event) => event.runId === `run_${index}`)).toBe(true);
      if (index === 7) return expect(result.stopReason).toBe('cancelled');
      expect(result.stopReason).toBe('completed');
      expect(result.output).toEqual({ goal: goals[index], seen: `value of goal${index}` });
    });
    // Every request carried its own run's goal only.
    for (const request of requests) {
      const users = request.messages.filter((message) => message.role === 'user');
      expect(users).toHaveLength(1);
    }
  });
});
