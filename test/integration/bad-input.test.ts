/**
 * Bad input, both kinds: a bad config or run input throws `LoopConfigError` before anything runs,
 * naming the field path and what was expected; bad model output and misbehaving tools take a
 * documented edge (repair feedback, parse error, error observation) and always end in a named stop.
 */
import { describe, expect, it } from 'vitest';
import { createLoop, evaluators, LoopConfigError, ToolHealth, type LoopConfig, type Model } from 'loopstate';
import { emptyReply, reply, scriptedModel, toolCall } from 'loopstate/testing';
import { createTestLoop, recordingTool, requestAt } from './helpers.js';

const GOAL = 'What is the status of record R-1?';

/** The issues `createLoop(config)` throws, or a failure when it does not throw `LoopConfigError`. */
function configIssues(config: unknown): readonly { path: string; message: string }[] {
  try {
    createLoop(config as LoopConfig);
  } catch (error) {
    expect(error).toBeInstanceOf(LoopConfigError);
    expect(error).toMatchObject({ code: 'invalid_config', name: 'LoopConfigError' });
    return (error as LoopConfigError).issues;
  }
  throw new Error('createLoop accepted an invalid config');
}

describe('bad config throws LoopConfigError before anything runs', () => {
  const model = () => scriptedModel([reply('never requested')]);

  it('names limits.maxSteps and the bound when it is 0', () => {
    const script = model();
    expect(configIssues({ model: script, limits: { maxSteps: 0 } })).toEqual([
      { path: 'limits.maxSteps', message: expect.stringMatching(/too small.*>\s*0/i) },
    ]);
    expect(script.calls).toHaveLength(0);
  });

  it('names an unknown top-level key (a typo of `limits`)', () => {
    const [issue, ...rest] = configIssues({ model: model(), limit: { maxSteps: 3 } });
    expect(rest).toEqual([]);
    expect(issue).toEqual({ path: 'limit', message: 'unknown option; did you mean "limits"?' });
  });

  it('lists the allowed options when an unknown key is not a near typo', () => {
    const [issue] = configIssues({ model: model(), verbose: true });
    expect(issue?.path).toBe('verbose');
    expect(issue?.message).toMatch(
      /^unknown option; expected one of: model, name, instructions, tools, evaluate, tasks, limits,/,
    );
  });

  it('names an unknown key inside limits', () => {
    const issues = configIssues({ model: model(), limits: { maxStep: 3 } });
    expect(issues).toEqual([{ path: 'limits.maxStep', message: 'unknown option; did you mean "maxSteps"?' }]);
  });

  it('rejects a tool that was not made with defineTool, naming its index', () => {
    const handRolled = { name: 'lookup', execute: () => 'ok' };
    expect(configIssues({ model: model(), tools: [handRolled] })).toEqual([
      { path: 'tools[0]', message: 'expected a tool made with defineTool({...})' },
    ]);
  });

  it('rejects duplicate tool names, naming the second one', () => {
    const first = recordingTool({ name: 'lookup' }).tool;
    const second = recordingTool({ name: 'lookup' }).tool;
    expect(configIssues({ model: model(), tools: [first, second] })).toEqual([
      { path: 'tools[1].name', message: 'duplicate tool name "lookup"' },
    ]);
  });

  it('rejects duplicate task ids', () => {
    const tasks = [
      { id: 'draft', prompt: 'Write a draft' },
      { id: 'draft', prompt: 'Write it again' },
    ];
    expect(configIssues({ model: model(), tasks })).toEqual([
      { path: 'tasks[1].id', message: 'duplicate task id "draft"' },
    ]);
  });

  it('rejects a task that requires an unknown tool, listing the known ones', () => {
    const tasks = [{ id: 'fetch', prompt: 'Fetch it', requires: ['search'] }];
    expect(configIssues({ model: model(), tools: [recordingTool({}).tool], tasks })).toEqual([
      { path: 'tasks[0].requires[0]', message: 'unknown tool "search"; known: lookup' },
    ]);
  });

  it('rejects an LLM judge as the only evaluator, at the loop and at a task', () => {
    const judge = evaluators.judge({ model: scriptedModel([]), criteria: 'Polite.' });
    expect(configIssues({ model: model(), evaluate: [judge] })).toEqual([
      { path: 'evaluate', message: expect.stringContaining('an LLM judge must not be the only check') },
    ]);
    expect(configIssues({ model: model(), tasks: [{ id: 'reply', prompt: 'Reply', evaluate: [judge] }] })).toEqual([
      { path: 'tasks[0].evaluate', message: expect.stringContaining('an LLM judge must not be the only check') },
    ]);
  });

  it('rejects a model without generate', () => {
    expect(configIssues({ model: { id: 'gpt-4.1-mini' } })).toEqual([
      { path: 'model', message: expect.stringContaining('generate(request)') },
    ]);
  });

  it('lists every bad field at once', () => {
    const issues = configIssues({
      model: model(),
      limits: { maxSteps: -1, maxRetries: 1.5 },
      noProgress: { repeatedToolCall: 1 },
    });
    expect(issues.map((issue) => issue.path).sort()).toEqual([
      'limits.maxRetries',
      'limits.maxSteps',
      'noProgress.repeatedToolCall',
    ]);
  });
});

describe('bad run input is refused before the model is called', () => {
  // Catches a synchronous throw as well as a rejection, so these tests check only the error; that run() rejects is tested below.
  const attempt = (run: () => unknown) => (async () => run())();

  it('refuses an empty goal', async () => {
    const model = scriptedModel([reply('never requested')]);
    const { loop } = createTestLoop({ model });

    const failure = await attempt(() => loop.run({ goal: '   ' })).catch((error: unknown) => error);

    expect(failure).toBeInstanceOf(LoopConfigError);
    expect((failure as LoopConfigError).issues).toEqual([{ path: 'goal', message: 'expected a non-empty goal' }]);
    expect(model.calls).toHaveLength(0);
  });

  it('refuses a goal that is not a string', async () => {
    const model = scriptedModel([reply('never requested')]);
    const { loop } = createTestLoop({ model });

    const failure = await attempt(() => loop.run({ goal: 42 as unknown as string })).catch((error: unknown) => error);

    expect(failure).toBeInstanceOf(LoopConfigError);
    expect((failure as LoopConfigError).issues).toEqual([
      { path: 'goal', message: expect.stringMatching(/expected string/i) },
    ]);
    expect(model.calls).toHaveLength(0);
  });
});

describe('bad model output takes a documented edge and ends in a named stop', () => {
  it('answers malformed JSON arguments with repair feedback; the repaired call runs', async () => {
    const { tool, executions } = recordingTool({});
    const model = scriptedModel([
      toolCall('lookup', '{"id": "R-1"'),
      toolCall('lookup', { id: 'R-1' }),
      reply('R-1 is shipped.'),
    ]);
    const { loop } = createTestLoop({ model, tools: [tool] });

    const result = await loop.run({ goal: GOAL });

    expect(requestAt(model, 1).at(-1)?.content).toMatch(
      /^Tool lookup was called with arguments that are not valid JSON \(.+\)\. Send the arguments as one JSON object/,
    );
    expect(result).toMatchObject({ stopReason: 'completed', output: 'R-1 is shipped.' });
    expect(executions).toEqual([{ id: 'R-1' }]);
    model.assertComplete();
  });

  it('stops with retries_exhausted when the arguments stay malformed', async () => {
    const { tool, executions } = recordingTool({});
    const model = scriptedModel([toolCall('lookup', '{"id": '), toolCall('lookup', 'id=R-1')]);
    const { loop } = createTestLoop({ model, tools: [tool] });

    const result = await loop.run({ goal: GOAL });

    expect(result).toMatchObject({
      stopReason: 'retries_exhausted',
      status: 'failed',
      detail: 'task main: tool arguments still invalid after 1 repair(s); raise limits.maxArgumentRepairs',
    });
    expect(executions).toEqual([]);
    model.assertComplete();
  });

  it('answers an unknown tool name with the list of available tools', async () => {
    const { tool } = recordingTool({});
    const model = scriptedModel([
      toolCall('fetch_record', { id: 'R-1' }),
      toolCall('lookup', { id: 'R-1' }),
      reply('R-1 is shipped.'),
    ]);
    const { loop } = createTestLoop({ model, tools: [tool] });

    const result = await loop.run({ goal: GOAL });

    expect(requestAt(model, 1).at(-1)).toEqual({
      role: 'tool',
      toolCallId: 'call_0_0',
      content: 'Unknown tool "fetch_record". Available tools: lookup.',
    });
    expect(result).toMatchObject({ stopReason: 'completed', output: 'R-1 is shipped.' });
    model.assertComplete();
  });

  it('tells the valid sibling of an invalid call in the same reply that it was not executed', async () => {
    const { tool, executions } = recordingTool({});
    const model = scriptedModel([
      toolCall([
        { name: 'lookup', args: { id: 'R-1' } },
        { name: 'lookup', args: { id: 2 } },
      ]),
      toolCall('lookup', { id: 'R-2' }),
      reply('Both found.'),
    ]);
    const { loop } = createTestLoop({ model, tools: [tool] });

    const result = await loop.run({ goal: 'Find R-1 and R-2' });

    const answers = requestAt(model, 1).filter((message) => message.role === 'tool');
    expect(answers).toEqual([
      {
        role: 'tool',
        toolCallId: 'call_0_0',
        content: 'Not executed: another call in the same reply was invalid. Fix that call and call this one again.',
      },
      { role: 'tool', toolCallId: 'call_0_1', content: expect.stringContaining('- id: ') },
    ]);
    expect(executions).toEqual([{ id: 'R-2' }]);
    expect(result.stopReason).toBe('completed');
  });

  it('answers an empty reply with parse-error feedback, then completes', async () => {
    const model = scriptedModel([emptyReply(), reply('R-1 is shipped.')]);
    const { loop } = createTestLoop({ model });

    const result = await loop.run({ goal: GOAL });

    expect(requestAt(model, 1).at(-1)).toEqual({
      role: 'user',
      content:
        'Your previous reply could not be used (empty_reply). Reply with your final answer as text, or call one of the offered tools.',
    });
    expect(result).toMatchObject({ stopReason: 'completed', output: 'R-1 is shipped.', steps: 2 });
    model.assertComplete();
  });

  it('treats a whitespace-only reply as empty', async () => {
    const model = scriptedModel([reply('  \n '), reply('R-1 is shipped.')]);
    const { loop } = createTestLoop({ model });

    const result = await loop.run({ goal: GOAL });

    expect(requestAt(model, 1).at(-1)?.content).toContain('(empty_reply)');
    expect(result.stopReason).toBe('completed');
  });
});

describe('misbehaving tools', () => {
  it('returns a thrown error to the model as an observation and the run continues', async () => {
    const { tool } = recordingTool({
      respond: () => {
        throw new Error('record store unreachable');
      },
    });
    const model = scriptedModel([
      toolCall('lookup', { id: 'R-1' }),
      reply('The record store is down; try again later.'),
    ]);
    const toolHealth = new ToolHealth();
    const { loop } = createTestLoop({ model, tools: [tool], toolHealth });

    const result = await loop.run({ goal: GOAL });

    expect(requestAt(model, 1).at(-1)).toEqual({
      role: 'tool',
      toolCallId: 'call_0_0',
      content: 'Tool lookup failed: record store unreachable',
    });
    expect(result).toMatchObject({ stopReason: 'completed', status: 'succeeded', usage: { toolCalls: 1 } });
    expect(result.trace).toContainEqual(expect.objectContaining({ type: 'tool-end', status: 'error' }));
    expect(toolHealth.snapshot().lookup).toMatchObject({ failures: 1, circuitOpen: false });
  });

  it('cuts an oversized result with the visible marker and a warning', async () => {
    const { tool } = recordingTool({ respond: () => 'x'.repeat(1_000) });
    const model = scriptedModel([toolCall('lookup', { id: 'R-1' }), reply('Too much data; here is the gist.')]);
    const { loop } = createTestLoop({ model, tools: [tool], limits: { maxToolResultBytes: 200 } });

    const result = await loop.run({ goal: GOAL });

    const observation = requestAt(model, 1).at(-1)?.content ?? '';
    expect(observation).toMatch(/^x+\n\[loopstate: tool result truncated: kept \d+ of 1000 bytes\]$/);
    expect(Buffer.byteLength(observation, 'utf8')).toBeLessThanOrEqual(200);
    expect(result.warnings).toEqual(['tool lookup (call_0_0): result cut from 1000 to 200 bytes']);
    expect(result.trace).toContainEqual(expect.objectContaining({ type: 'tool-end', truncated: true, bytes: 1_000 }));
    expect(result.stopReason).toBe('completed');
  });

  it('still completes when a tool returns something JSON cannot serialise', async () => {
    const cyclic: Record<string, unknown> = {};
    cyclic.self = cyclic;
    const { tool } = recordingTool({ respond: () => cyclic });
    const model = scriptedModel([toolCall('lookup', { id: 'R-1' }), reply('Done.')]);
    const { loop } = createTestLoop({ model, tools: [tool] });

    const result = await loop.run({ goal: GOAL });

    expect(requestAt(model, 1).at(-1)?.content).toMatch(
      /^Tool lookup completed, but its result could not be serialised as JSON/,
    );
    expect(result.stopReason).toBe('completed');
  });
});

describe('bad input never escapes as an exception', () => {
  it('run() with an invalid goal returns a rejected promise instead of throwing synchronously', async () => {
    const { loop } = createTestLoop({ model: scriptedModel([]) });
    // Today `loop.run({ goal: '' })` throws before returning a promise, so `.catch()` never sees it.
    await expect(loop.run({ goal: '' })).rejects.toBeInstanceOf(LoopConfigError);
  });

  it('a model adapter returning a malformed response ends the run with fatal_error instead of rejecting run()', async () => {
    const broken: Model = {
      id: 'scripted',
      generate: () => Promise.resolve({ text: 'hello' } as unknown as Awaited<ReturnType<Model['generate']>>),
    };
    const { loop } = createTestLoop({ model: broken });

    const result = await loop.run({ goal: GOAL });

    expect(result).toMatchObject({ stopReason: 'fatal_error', status: 'failed' });
  });
});

describe('faults in user hooks end the run with fatal_error, never a rejection', () => {
  it('a policy.decide hook that throws stops the run and keeps the error', async () => {
    const { tool, executions } = recordingTool({});
    const model = scriptedModel([toolCall('lookup', { id: 'R-1' })]);
    const { loop } = createTestLoop({
      model,
      tools: [tool],
      policy: {
        decide: () => {
          throw new Error('policy service down');
        },
      },
    });

    const result = await loop.run({ goal: GOAL });

    expect(result).toMatchObject({
      stopReason: 'fatal_error',
      status: 'failed',
      detail: 'run faulted: Error: policy service down',
    });
    expect(result.error).toMatchObject({ name: 'Error', message: 'policy service down' });
    expect(executions).toEqual([]);
  });

  it('a task prompt function that throws stops the run before any model call', async () => {
    const model = scriptedModel([reply('never')]);
    const { loop } = createTestLoop({
      model,
      tasks: [
        {
          id: 'first',
          prompt: () => {
            throw new TypeError('outputs.draft is undefined');
          },
        },
      ],
    });

    const result = await loop.run({ goal: GOAL });

    expect(result).toMatchObject({
      stopReason: 'fatal_error',
      detail: 'run faulted: TypeError: outputs.draft is undefined',
      steps: 0,
    });
    expect(model.calls).toHaveLength(0);
  });

  it('a trace sink that throws is disabled with a warning and the run completes', async () => {
    const seen: string[] = [];
    const model = scriptedModel([reply('R-1 is shipped')]);
    const { loop } = createTestLoop({
      model,
      trace: {
        onEvent: (event) => {
          seen.push(event.type);
          if (event.type === 'transition') throw new Error('disk full');
        },
      },
    });

    const result = await loop.run({ goal: GOAL });

    expect(result).toMatchObject({ stopReason: 'completed', output: 'R-1 is shipped' });
    expect(result.warnings).toContain('trace.onEvent threw and was disabled for this run: disk full');
    expect(seen).toEqual(['run-start', 'machine-event', 'transition']);
    // The in-memory trace is unaffected by the broken sink.
    expect(result.trace.map((event) => event.type)).toContain('run-end');
  });
});

describe('odd abort reasons', () => {
  it('a cancel whose reason cannot be serialised still cancels, with a readable detail', async () => {
    const controller = new AbortController();
    const model = scriptedModel([
      () => {
        controller.abort(10n);
        return reply('too late');
      },
    ]);
    const { loop } = createTestLoop({ model });

    const result = await loop.run({ goal: GOAL, signal: controller.signal });

    expect(result).toMatchObject({ stopReason: 'cancelled', status: 'failed', detail: 'cancelled: "10"' });
  });
});
