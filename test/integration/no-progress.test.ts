/**
 * No-progress detection, table-driven from recorded shapes of real loops: every shape of legitimate
 * work must complete under the default thresholds, and every doom loop must stop with `no_progress`
 * naming its signal. Then one test per signal for the nudge it sends first, the option that
 * controls it, and its edge cases.
 */
import { describe, expect, it } from 'vitest';
import { z } from 'zod';
import { defineTool, evaluators, ToolCallError, type LoopConfig, type Tool } from 'loopstate';
import { emptyReply, reply, scriptedModel, toolCall, type ScriptStep } from 'loopstate/testing';
import { contentsWithRole, createTestLoop, recordingTool, requestAt } from './helpers.js';

const GOAL = 'Investigate why checkout is slow';

/** A read tool whose result is computed from its arguments and a per-tool call counter. */
function tool(name: string, respond: (args: Record<string, unknown>, call: number) => unknown): Tool {
  let calls = 0;
  return defineTool({
    name,
    description: `Test tool ${name}`,
    input: z.record(z.string(), z.unknown()),
    access: name.startsWith('write') || name.startsWith('edit') ? 'write' : 'read',
    execute: (args) => respond(args, calls++),
  });
}

interface Shape {
  name: string;
  script: ScriptStep[];
  config?: Partial<LoopConfig>;
}

const lookup = tool('lookup', ({ id }) => ({ id, owner: `owner of ${String(id)}` }));

/** Legitimate work: must complete under the default thresholds. */
const MUST_COMPLETE: Shape[] = [
  {
    name: '30 distinct investigation steps (maxSteps 50)',
    script: [
      ...Array.from({ length: 30 }, (_, step) => toolCall('run_diagnostic', { command: `check-${step}` })),
      reply('Root cause: a saturated connection pool.'),
    ],
    config: {
      tools: [
        tool('run_diagnostic', ({ command }) => `output of ${String(command)}: ${String(command).length * 7} ms`),
      ],
      limits: { maxSteps: 50 },
    },
  },
  {
    name: 'six writes that each return the same acknowledgement',
    script: [
      ...Array.from({ length: 6 }, (_, index) =>
        toolCall('write_file', { path: `src/file-${index}.ts`, content: `export const n = ${index};` }),
      ),
      reply('Wrote six files.'),
    ],
    config: { tools: [tool('write_file', () => ({ ok: true }))] },
  },
  {
    name: 'fix / re-test cycles: the same run_tests {} with new output each time',
    script: [
      toolCall('run_tests', {}),
      toolCall('edit_file', { patch: 'fix null check' }),
      toolCall('run_tests', {}),
      toolCall('edit_file', { patch: 'fix off-by-one' }),
      toolCall('run_tests', {}),
      toolCall('edit_file', { patch: 'fix timezone' }),
      toolCall('run_tests', {}),
      reply('All tests pass.'),
    ],
    config: {
      tools: [tool('run_tests', (_args, call) => `${3 - call} failing`), tool('edit_file', () => ({ ok: true }))],
    },
  },
  {
    name: 'polling a job whose result changes',
    script: [...Array.from({ length: 5 }, () => toolCall('check_job', { id: 'J-1' })), reply('The job finished.')],
    config: { tools: [tool('check_job', (_args, call) => ({ id: 'J-1', progress: Math.min(100, call * 25) }))] },
  },
  {
    name: 'a verify task re-reading the sources an earlier task read',
    script: [
      toolCall('read_source', { name: 'a' }),
      toolCall('read_source', { name: 'b' }),
      reply('draft from a and b'),
      toolCall('read_source', { name: 'a' }),
      toolCall('read_source', { name: 'b' }),
      reply('verified'),
    ],
    config: {
      tools: [tool('read_source', ({ name }) => `contents of ${String(name)}`)],
      tasks: [
        { id: 'draft', prompt: 'Draft from the sources' },
        { id: 'verify', prompt: 'Verify the draft against the sources' },
      ],
    },
  },
  {
    name: 'an answer that improves on every attempt under one evaluator reason',
    script: [reply('{"items":[1]}'), reply('{"items":[1,2]}'), reply('{"items":[1,2,3]}')],
    config: { evaluate: [evaluators.schema(z.object({ items: z.array(z.number()).min(3) }))] },
  },
  {
    name: 'each step lists the files again (the same result) beside reading a new one',
    script: [
      ...Array.from({ length: 6 }, (_, index) =>
        toolCall([
          { name: 'list_files', args: {} },
          { name: 'read_file', args: { id: `f${index}` } },
        ]),
      ),
      reply('Read six files.'),
    ],
    config: {
      tools: [
        tool('list_files', () => ['f0', 'f1', 'f2', 'f3', 'f4', 'f5']),
        tool('read_file', ({ id }) => `contents of ${String(id)}`),
      ],
    },
  },
  {
    name: 'a flaky tool failing twice with the same transient error before it answers',
    script: [
      toolCall('search', { q: 'latency' }),
      toolCall('search', { q: 'latency' }),
      toolCall('search', { q: 'latency' }),
      reply('Found it.'),
    ],
    config: {
      tools: [
        tool('search', (_args, call) => {
          if (call < 2) throw new Error('503 Service Unavailable');
          return 'p99 latency doubled at 14:02';
        }),
      ],
    },
  },
];

/** Doom loops: must stop with no_progress, naming the signal. */
const MUST_STOP: (Shape & { signal: string; modelCalls: number })[] = [
  {
    name: 'the same call with the same result three times',
    script: [
      toolCall('lookup', { id: 'R-1' }),
      toolCall('lookup', { id: 'R-1' }),
      toolCall('lookup', { id: 'R-1' }),
      reply('never reached'),
    ],
    config: { tools: [lookup] },
    signal: 'repeated_tool_call',
    modelCalls: 3,
  },
  {
    name: 'an A, B, A, B cycle whose results do not change',
    script: [
      toolCall('lookup', { id: 'A' }),
      toolCall('lookup', { id: 'B' }),
      toolCall('lookup', { id: 'A' }),
      toolCall('lookup', { id: 'B' }),
      reply('never reached'),
    ],
    config: { tools: [lookup] },
    signal: 'repeated_tool_call',
    modelCalls: 4,
  },
  {
    name: 'an A, B, A, B, A cycle caught as duplicate observations when repeats are allowed more often',
    script: [
      toolCall('lookup', { id: 'A' }),
      toolCall('lookup', { id: 'B' }),
      toolCall('lookup', { id: 'A' }),
      toolCall('lookup', { id: 'B' }),
      toolCall('lookup', { id: 'A' }),
      reply('never reached'),
    ],
    config: { tools: [lookup], noProgress: { repeatedToolCall: 10 } },
    signal: 'duplicate_observation',
    modelCalls: 5,
  },
  {
    name: 'a period-3 cycle A, B, C, A, B',
    script: [
      toolCall('lookup', { id: 'A' }),
      toolCall('lookup', { id: 'B' }),
      toolCall('lookup', { id: 'C' }),
      toolCall('lookup', { id: 'A' }),
      toolCall('lookup', { id: 'B' }),
      reply('never reached'),
    ],
    config: { tools: [lookup] },
    signal: 'repeated_tool_call',
    modelCalls: 5,
  },
  {
    name: 'the same parse error three times',
    script: [emptyReply(), emptyReply(), emptyReply(), reply('never reached')],
    signal: 'same_parse_error',
    modelCalls: 3,
  },
  {
    name: 'the identical rejected answer twice',
    script: [reply('{"items":[1]}'), reply('{"items":[1]}'), reply('never reached')],
    config: { evaluate: [evaluators.schema(z.object({ items: z.array(z.number()).min(3) }))] },
    signal: 'same_evaluator_reason',
    modelCalls: 2,
  },
];

describe('recorded shapes of legitimate work complete under the default thresholds', () => {
  it.each(MUST_COMPLETE)('$name', async ({ script, config }) => {
    const model = scriptedModel(script);
    const { loop } = createTestLoop({ model, ...config });

    const result = await loop.run({ goal: GOAL });

    // Every task completed; the detail says whether an evaluator checked them.
    const tasks = config?.tasks?.length ?? 1;
    const unchecked =
      tasks === 1
        ? 'completed; no evaluator configured'
        : `${tasks} of ${tasks} task(s) completed; no evaluator configured`;
    expect(result.detail).toBe(
      config?.evaluate === undefined ? unchecked : `${tasks} of ${tasks} task(s) passed evaluation`,
    );
    expect(result.stopReason).toBe('completed');
    expect(result.warnings.filter((warning) => warning.includes('nudge'))).toEqual([]);
    model.assertComplete();
  });
});

describe('recorded doom loops stop with no_progress, naming the signal and its option', () => {
  it.each(MUST_STOP)('$name', async ({ script, config, signal, modelCalls }) => {
    const model = scriptedModel(script);
    const { loop } = createTestLoop({ model, ...config });

    const result = await loop.run({ goal: GOAL });

    expect(result).toMatchObject({ stopReason: 'no_progress', status: 'failed' });
    expect(result.detail).toContain(`${signal}:`);
    expect(result.detail).toMatch(/raise noProgress\.\w+/);
    expect(model.calls).toHaveLength(modelCalls);
  });
});

describe('repeated tool call', () => {
  it('runs the repeat, nudges with its result in hand, then stops on the third; the detail names tool, count and option', async () => {
    const { tool: lookupTool, executions } = recordingTool({ respond: () => ({ owner: 'ops' }) });
    const model = scriptedModel([
      toolCall('lookup', { id: 'R-1' }),
      // Same call with its keys in another order: the fingerprint is canonical JSON.
      toolCall('lookup', { id: 'R-1' }),
      toolCall('lookup', { id: 'R-1' }),
    ]);
    const { loop } = createTestLoop({ model, tools: [lookupTool] });

    const result = await loop.run({ goal: GOAL });

    expect(contentsWithRole(requestAt(model, 2), 'user').at(-1)).toContain(
      'You called a tool again with the same arguments and got the same result',
    );
    expect(result.warnings).toContain('no-progress nudge at step 2: repeated_tool_call');
    expect(result.detail).toBe(
      'no progress after a nudge: repeated_tool_call: lookup was called with the same arguments and brought the same result 3 times in this task (threshold 2); raise noProgress.repeatedToolCall',
    );
    expect(executions).toHaveLength(3);
  });

  it('a higher repeatedToolCall lets the same run complete', async () => {
    const model = scriptedModel([
      toolCall('lookup', { id: 'R-1' }),
      toolCall('lookup', { id: 'R-1' }),
      toolCall('lookup', { id: 'R-1' }),
      reply('The owner is ops.'),
    ]);
    const { loop } = createTestLoop({
      model,
      tools: [lookup],
      noProgress: { repeatedToolCall: 4, duplicateObservation: 4 },
    });

    expect(await loop.run({ goal: GOAL })).toMatchObject({
      stopReason: 'completed',
      output: 'The owner is ops.',
      warnings: [],
    });
  });

  it('a nudge answered with new results is forgiven: a later, unrelated repeat nudges again instead of stopping', async () => {
    const model = scriptedModel([
      toolCall('lookup', { id: 'A' }),
      toolCall('lookup', { id: 'A' }), // repeat: nudge
      toolCall('lookup', { id: 'B' }),
      toolCall('lookup', { id: 'C' }), // new results
      toolCall('lookup', { id: 'B' }), // an unrelated repeat: nudged again, not stopped
      reply('done'),
    ]);
    const { loop } = createTestLoop({ model, tools: [lookup] });

    const result = await loop.run({ goal: GOAL });

    expect(result.stopReason).toBe('completed');
    expect(result.warnings.filter((warning) => warning.startsWith('no-progress nudge'))).toEqual([
      'no-progress nudge at step 2: repeated_tool_call',
      'no-progress nudge at step 5: repeated_tool_call',
    ]);
  });
});

describe('unchanged state', () => {
  it('nudges when the model keeps making the same call and learns nothing new, then stops', async () => {
    // Repeats are allowed often here, so the unchanged state is what stops the run.
    const model = scriptedModel(Array.from({ length: 8 }, () => toolCall('lookup', { id: 'R-1' })));
    const { loop } = createTestLoop({
      model,
      tools: [lookup],
      noProgress: { repeatedToolCall: 10, duplicateObservation: 10 },
    });

    const result = await loop.run({ goal: GOAL });

    expect(result).toMatchObject({ stopReason: 'no_progress' });
    expect(result.detail).toContain('unchanged_state: nothing new for');
    expect(result.detail).toContain('raise noProgress.unchangedState');
  });

  it('a call the policy keeps refusing to the model is a repeat like any other', async () => {
    const forbidden = recordingTool({ name: 'forbidden', access: 'destructive' });
    const model = scriptedModel(Array.from({ length: 5 }, () => toolCall('forbidden', { id: 'x' })));
    const { loop } = createTestLoop({
      model,
      tools: [forbidden.tool],
      policy: { allow: ['read'], requireApproval: [], onDeny: 'tell_model' },
    });

    const result = await loop.run({ goal: GOAL });

    expect(result.detail).toContain(
      'repeated_tool_call: forbidden was called with the same arguments and brought the same result',
    );
    expect(forbidden.executions).toEqual([]);
  });

  it('two denied calls in turn (A, B, A, B) are a cycle too', async () => {
    const del = recordingTool({ name: 'del', access: 'write' });
    const model = scriptedModel(
      Array.from({ length: 10 }, (_, index) => toolCall('del', { id: index % 2 === 0 ? 'X' : 'Y' })),
    );
    const { loop } = createTestLoop({ model, tools: [del.tool], policy: { allow: ['read'], onDeny: 'tell_model' } });

    const result = await loop.run({ goal: GOAL });

    expect(result.stopReason).toBe('no_progress');
    expect(model.calls.length).toBeLessThanOrEqual(4);
    expect(del.executions).toEqual([]);
  });
});

describe('the same call failing with the same caller-fault error', () => {
  it('is a repeat: the tool blamed the call, so the same call will fail the same way', async () => {
    const user = defineTool({
      name: 'user',
      description: 'Looks a user up',
      input: z.object({ id: z.string() }),
      access: 'read',
      execute: () => {
        throw new ToolCallError({ message: 'no such user', blame: 'caller' });
      },
    });
    const model = scriptedModel([...Array.from({ length: 12 }, () => toolCall('user', { id: 'U1' })), reply('x')]);
    const { loop } = createTestLoop({ model, tools: [user], limits: { maxSteps: 20 } });

    const result = await loop.run({ goal: GOAL });

    expect(result.stopReason).toBe('no_progress');
    expect(result.detail).toContain('repeated_tool_call: user');
    expect(model.calls).toHaveLength(3);
  });

  it('a transient failure of the same call is not: the retry layers and the circuit breaker own it', async () => {
    const model = scriptedModel([toolCall('search', { q: 'x' }), toolCall('search', { q: 'x' }), reply('found')]);
    const { loop } = createTestLoop({
      model,
      tools: [
        tool('search', (_args, call) => {
          if (call < 1) throw new Error('503 Service Unavailable');
          return 'hit';
        }),
      ],
    });

    expect((await loop.run({ goal: GOAL })).stopReason).toBe('completed');
  });
});

describe('same evaluator reason', () => {
  it('feeds the reason back, and stops when the identical output comes back with the identical reason', async () => {
    const model = scriptedModel([reply('{"items":[1]}'), reply('{"items":[1]}')]);
    const { loop } = createTestLoop({
      model,
      evaluate: [evaluators.schema(z.object({ items: z.array(z.number()).min(3) }))],
      limits: { maxRetries: 5 },
    });

    const result = await loop.run({ goal: GOAL });

    expect(contentsWithRole(requestAt(model, 1), 'user').at(-1)).toMatch(
      /^Your previous answer did not pass evaluation: .*items/,
    );
    expect(result.detail).toMatch(
      /^no progress after the reason was fed back: same_evaluator_reason: the same output was rejected 2 times for the same reason \(threshold 2\): .*items.*; raise noProgress\.sameEvaluatorReason$/,
    );
  });

  it('a changing answer under one reason is bounded by maxRetries, not no_progress', async () => {
    const model = scriptedModel([reply('{"items":[1]}'), reply('{"items":[2]}'), reply('{"items":[3]}')]);
    const { loop } = createTestLoop({
      model,
      evaluate: [evaluators.schema(z.object({ items: z.array(z.number()).min(3) }))],
    });

    const result = await loop.run({ goal: GOAL });

    expect(result.stopReason).toBe('retries_exhausted');
    expect(model.calls).toHaveLength(3);
  });
});

describe('same parse error', () => {
  it('asks for a usable reply, nudges on the second identical parse error naming it, then stops on the third', async () => {
    const model = scriptedModel([emptyReply(), emptyReply(), emptyReply()]);
    const { loop } = createTestLoop({ model });

    const result = await loop.run({ goal: GOAL });

    expect(contentsWithRole(requestAt(model, 1), 'user').at(-1)).toContain(
      'Your previous reply could not be used (empty_reply)',
    );
    expect(contentsWithRole(requestAt(model, 2), 'user').at(-1)).toContain(
      'You keep making the same formatting mistake',
    );
    expect(contentsWithRole(requestAt(model, 2), 'user').at(-1)).toContain('The error: empty_reply');
    expect(result.detail).toBe(
      'no progress after a nudge: same_parse_error: empty_reply 3 times in a row (threshold 2); raise noProgress.sameParseError',
    );
  });

  it("invalid arguments are the repair layer's first: with the default single repair the run ends retries_exhausted", async () => {
    const model = scriptedModel([toolCall('lookup', '{"id": 1}'), toolCall('lookup', '{"id": 2}')]);
    const { loop } = createTestLoop({ model, tools: [recordingTool({}).tool] });

    expect((await loop.run({ goal: GOAL })).stopReason).toBe('retries_exhausted');
  });
});

describe('plan stall (only with the built-in plan tool)', () => {
  const plan = (statuses: string[]) => ({
    items: statuses.map((status, index) => ({ id: `item-${index}`, title: `Step ${index}`, status })),
  });

  it('nudges after planStall decisions without an item done and without anything new, then stops; the detail names the option', async () => {
    const model = scriptedModel([
      toolCall('update_plan', plan(['in_progress', 'pending'])),
      // The first lookup is news; its repeats are not (repeats are allowed often here, so the plan is what stalls).
      ...Array.from({ length: 6 }, () => toolCall('lookup', { id: 'L-1' })),
    ]);
    const { loop } = createTestLoop({
      model,
      tools: [lookup],
      plan: true,
      noProgress: { planStall: 3, repeatedToolCall: 10, duplicateObservation: 10, unchangedState: 10 },
    });

    const result = await loop.run({ goal: GOAL });

    expect(model.calls[0]?.tools.map((spec) => spec.name)).toContain('update_plan');
    expect(contentsWithRole(requestAt(model, 4), 'user').at(-1)).toContain(
      'Your plan has had no item completed or removed',
    );
    expect(result).toMatchObject({ stopReason: 'no_progress' });
    expect(result.detail).toBe(
      'no progress after a nudge: plan_stall: 4 steps without a plan item done or removed (threshold 3); raise noProgress.planStall',
    );
  });

  it('an item that takes many steps of new results is nudged, never stopped (default threshold)', async () => {
    const model = scriptedModel([
      toolCall('update_plan', plan(['in_progress', 'pending'])),
      ...Array.from({ length: 24 }, (_, index) => toolCall('lookup', { id: `F-${index}` })),
      toolCall('update_plan', plan(['done', 'done'])),
      reply('Investigated and written up.'),
    ]);
    const { loop } = createTestLoop({ model, tools: [lookup], plan: true, limits: { maxSteps: 40 } });

    const result = await loop.run({ goal: GOAL });

    expect(result.stopReason).toBe('completed');
    expect(result.warnings.filter((warning) => warning.includes('plan_stall')).length).toBeGreaterThanOrEqual(1);
  });

  it('adding and closing throwaway items does not count as moving the plan', async () => {
    const junk = (index: number) =>
      toolCall('update_plan', {
        items: [
          { id: 'a', title: 'the real item', status: 'in_progress' },
          { id: `junk-${index}`, title: 'junk', status: 'done' },
        ],
      });
    const model = scriptedModel(Array.from({ length: 18 }, (_, index) => junk(index)));
    const { loop } = createTestLoop({
      model,
      plan: true,
      limits: { maxSteps: 20 },
      noProgress: { planStall: 3, unchangedState: 50 },
    });

    const result = await loop.run({ goal: GOAL });

    expect(result.stopReason).toBe('no_progress');
    expect(result.detail).toContain('plan_stall');
  });

  it('a plan whose items get done keeps going, and the model that finishes it completes', async () => {
    const model = scriptedModel([
      toolCall('update_plan', plan(['in_progress', 'pending'])),
      toolCall('lookup', { id: 'L-1' }),
      toolCall('lookup', { id: 'L-2' }),
      toolCall('update_plan', plan(['done', 'in_progress'])),
      toolCall('lookup', { id: 'L-3' }),
      toolCall('lookup', { id: 'L-4' }),
      toolCall('update_plan', plan(['done', 'removed'])),
      reply('Both items handled.'),
    ]);
    const { loop } = createTestLoop({ model, tools: [lookup], plan: true, noProgress: { planStall: 3 } });

    expect(await loop.run({ goal: GOAL })).toMatchObject({ stopReason: 'completed', warnings: [] });
  });

  it('without a plan, a long loop never plan-stalls, whatever planStall says', async () => {
    const model = scriptedModel([
      ...Array.from({ length: 8 }, (_, step) => toolCall('lookup', { id: `L-${step}` })),
      reply('done'),
    ]);
    const { loop } = createTestLoop({ model, tools: [lookup], noProgress: { planStall: 1 } });

    expect((await loop.run({ goal: GOAL })).stopReason).toBe('completed');
  });
});

describe('maxStepsPerTask is a budget, not a no-progress signal', () => {
  it('fails the task with max_steps and a detail naming the task; onFailure continue goes on', async () => {
    const model = scriptedModel([
      toolCall('lookup', { id: 'A' }),
      toolCall('lookup', { id: 'B' }),
      reply('second task done'),
    ]);
    const { loop } = createTestLoop({
      model,
      tools: [lookup],
      limits: { maxStepsPerTask: 2 },
      tasks: [
        { id: 'explore', prompt: 'Explore', onFailure: 'continue' },
        { id: 'answer', prompt: 'Answer' },
      ],
    });

    const result = await loop.run({ goal: GOAL });

    expect(result.stopReason).toBe('completed');
    expect(
      result.warnings.some((warning) =>
        warning.includes('task explore failed (max_steps: task explore reached maxStepsPerTask (2)'),
      ),
    ).toBe(true);
  });

  it('stops the run with max_steps when the task stops on failure', async () => {
    const model = scriptedModel([toolCall('lookup', { id: 'A' }), toolCall('lookup', { id: 'B' })]);
    const { loop } = createTestLoop({ model, tools: [lookup], limits: { maxStepsPerTask: 2, maxSteps: 10 } });

    const result = await loop.run({ goal: GOAL });

    expect(result).toMatchObject({
      stopReason: 'max_steps',
      detail: 'task main reached maxStepsPerTask (2) before it passed evaluation; raise limits.maxStepsPerTask',
    });
  });
});
