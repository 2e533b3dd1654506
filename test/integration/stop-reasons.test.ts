/**
 * One full run per stop reason (DESIGN §3), through `createLoop` + `scriptedModel` + a virtual clock:
 * the reason, the status it maps to, the detail, the best partial output and what the model saw. The stops a
 * limit makes are here; those of a policy, a tool's health, a person, a cancellation or a failure are in
 * stop-reasons-failures.test.ts.
 */
import { describe, expect, it } from 'vitest';
import { z } from 'zod';
import { evaluators } from 'loopstate';
import { modelError, reply, scriptedModel, toolCall } from 'loopstate/testing';
import { createTestLoop, recordingTool, requestAt, transcriptText } from './helpers.js';

const answer = z.object({ id: z.string(), status: z.string() });
const GOAL = 'What is the status of record R-1?';

describe('completed', () => {
  it('stops as succeeded with the evaluated output, usage and no warnings', async () => {
    const { tool, executions } = recordingTool({ respond: ({ id }) => ({ id, status: 'shipped' }) });
    const model = scriptedModel([
      toolCall('lookup', { id: 'R-1' }, { usage: { inputTokens: 200, outputTokens: 10 } }),
      reply('{"id":"R-1","status":"shipped"}', { usage: { inputTokens: 300, outputTokens: 15 } }),
    ]);
    const { loop } = createTestLoop({ model, tools: [tool], evaluate: [evaluators.schema(answer)] });

    const result = await loop.run({ goal: GOAL });

    expect(result).toMatchObject({
      stopReason: 'completed',
      status: 'succeeded',
      detail: '1 of 1 task(s) passed evaluation',
      steps: 2,
    });
    expect(result.output).toEqual({ id: 'R-1', status: 'shipped' });
    expect(result.warnings).toEqual([]);
    expect(result.usage).toMatchObject({ inputTokens: 500, outputTokens: 25, modelCalls: 2, toolCalls: 1 });
    // The scripted model is priced at $0.4 / $1.6 per million tokens.
    expect(result.usage.costUsd).toBeCloseTo((500 * 0.4 + 25 * 1.6) / 1e6, 12);
    expect(executions).toEqual([{ id: 'R-1' }]);
    expect(requestAt(model, 1).at(-1)).toEqual({
      role: 'tool',
      toolCallId: 'call_0_0',
      content: '{"id":"R-1","status":"shipped"}',
    });
    model.assertComplete();
  });

  it('says no evaluator is configured instead of claiming the answer passed evaluation', async () => {
    const { loop } = createTestLoop({ model: scriptedModel([reply('whatever the model says')]) });

    const result = await loop.run({ goal: GOAL });

    expect(result).toMatchObject({
      stopReason: 'completed',
      detail: 'completed; no evaluator configured',
      output: 'whatever the model says',
    });
    expect(result.trace.at(-1)).toMatchObject({ type: 'run-end', detail: 'completed; no evaluator configured' });
  });

  it('names the tasks of a workflow that no evaluator checked, and keeps the old detail when every task has one', async () => {
    const tasks = [
      { id: 'classify', prompt: 'Classify.', evaluate: evaluators.json() },
      { id: 'draft', prompt: 'Draft.' },
      { id: 'polish', prompt: 'Polish.', evaluate: [] },
    ];
    const mixed = await createTestLoop({
      model: scriptedModel([reply('{"kind":"bug"}'), reply('a draft'), reply('polished')]),
      tasks,
    }).loop.run({ goal: GOAL });
    expect(mixed).toMatchObject({
      stopReason: 'completed',
      detail: '3 of 3 task(s) completed; no evaluator configured for draft, polish',
    });

    const unchecked = await createTestLoop({
      model: scriptedModel([reply('a'), reply('b')]),
      tasks: [
        { id: 'a', prompt: 'A.' },
        { id: 'b', prompt: 'B.' },
      ],
    }).loop.run({ goal: GOAL });
    expect(unchecked.detail).toBe('2 of 2 task(s) completed; no evaluator configured');

    const checked = await createTestLoop({
      model: scriptedModel([reply('a'), reply('b')]),
      tasks: [
        { id: 'a', prompt: 'A.' },
        { id: 'b', prompt: 'B.' },
      ],
      evaluate: evaluators.rule(() => true, 'never fails'),
    }).loop.run({ goal: GOAL });
    expect(checked.detail).toBe('2 of 2 task(s) passed evaluation');
  });
});

describe('max_steps', () => {
  it('stops at maxSteps without running the tools requested on the last allowed step', async () => {
    const { tool, executions } = recordingTool({});
    const model = scriptedModel([
      toolCall('lookup', { id: 'R-1' }, { text: 'Looking up R-1.' }),
      toolCall('lookup', { id: 'R-2' }, { text: 'Now R-2.' }),
    ]);
    const { loop } = createTestLoop({ model, tools: [tool], limits: { maxSteps: 2 } });

    const result = await loop.run({ goal: GOAL });

    expect(result).toMatchObject({ stopReason: 'max_steps', status: 'failed', steps: 2 });
    expect(result.detail).toBe('reached maxSteps (2) before the task passed evaluation; raise limits.maxSteps');
    expect(executions).toEqual([{ id: 'R-1' }]);
    expect(result.usage).toMatchObject({ modelCalls: 2, toolCalls: 1 });
    // The last reply was never evaluated, so nothing parsed: output is null, its text is rawOutput, flagged as partial.
    expect(result).toMatchObject({ output: null, rawOutput: 'Now R-2.' });
    expect(result.warnings).toEqual([expect.stringContaining('partial output: the run stopped (max_steps)')]);
    model.assertComplete();
  });
});

describe('deadline_exceeded', () => {
  it('stops when a slow tool runs past the deadline, without another model call', async () => {
    const model = scriptedModel([
      toolCall('slow_lookup', { id: 'R-1' }, { text: 'Checking.' }),
      reply('never requested'),
    ]);
    const { loop, clock } = createTestLoop({
      model,
      tools: [
        recordingTool({
          name: 'slow_lookup',
          respond: () => {
            clock.advance(6_000);
            return { status: 'late' };
          },
        }).tool,
      ],
      limits: { deadlineMs: 5_000 },
    });

    const result = await loop.run({ goal: GOAL });

    expect(result).toMatchObject({
      stopReason: 'deadline_exceeded',
      status: 'failed',
      detail: 'the run passed its deadline (5000 ms); raise limits.deadlineMs',
    });
    expect(model.calls).toHaveLength(1);
    expect(model.remaining).toBe(1);
    expect(result).toMatchObject({ output: null, rawOutput: 'Checking.' });
    expect(result.warnings).toEqual([expect.stringContaining('partial output')]);
  });

  it('stops instead of sleeping when a transport backoff would wake past the deadline, naming the 429 and its wait', async () => {
    const model = scriptedModel([modelError({ status: 429, retryAfterMs: 10_000 }), reply('never requested')]);
    const { loop, clock } = createTestLoop({ model, limits: { deadlineMs: 5_000 } });

    const result = await loop.run({ goal: GOAL });

    // The run had not passed its deadline: the 429's wait would have.
    expect(result).toMatchObject({
      stopReason: 'deadline_exceeded',
      status: 'failed',
      steps: 0,
      detail:
        'model call 1 failed (HTTP 429) and the server asked to wait 10000 ms (Retry-After): the retry would start 5000 ms after the deadline (5000 ms; 5000 ms were left), so the run stopped without waiting; raise limits.deadlineMs (or lower retry.maxRetryAfterMs)',
    });
    expect(model.calls).toHaveLength(1);
    expect(result.usage.modelCalls).toBe(1);
    // It never slept into the deadline.
    expect(clock.now()).toBeLessThan(5_000);
    expect(result.output).toBeNull();
  });
});

describe('budget_exhausted', () => {
  it('does not pay an LLM judge once the final reply has spent the budget', async () => {
    const judgeModel = scriptedModel([reply('{"passed": true, "reason": "fine"}')], { id: 'judge-model' });
    const model = scriptedModel([reply('{"id":"R-1","status":"shipped"}', { usage: { outputTokens: 60 } })]);
    const evaluate = [
      evaluators.schema(answer),
      evaluators.judge({ model: judgeModel, criteria: 'The status is plausible.' }),
    ];
    const { loop } = createTestLoop({ model, evaluate, limits: { maxOutputTokens: 50 } });

    const result = await loop.run({ goal: GOAL });

    expect(judgeModel.calls).toHaveLength(0);
    expect(result).toMatchObject({
      stopReason: 'budget_exhausted',
      status: 'failed',
      detail: 'output tokens 60 reached maxOutputTokens (50); raise limits.maxOutputTokens',
    });
    expect(result.usage.modelCalls).toBe(1);
    // The schema parsed the reply before the unpaid judge "failed" it: output keeps the parsed value.
    expect(result).toMatchObject({
      output: { id: 'R-1', status: 'shipped' },
      rawOutput: '{"id":"R-1","status":"shipped"}',
    });
    const verdict = result.trace.find((event) => event.type === 'evaluation-end');
    expect(verdict).toMatchObject({
      passed: false,
      reason: expect.stringContaining('was not run: the token or cost budget is spent'),
    });
  });

  it('pays the LLM judge while the budget stands, and counts its call', async () => {
    const judgeModel = scriptedModel(
      [reply('{"passed": true, "reason": "fine"}', { usage: { inputTokens: 30, outputTokens: 5 } })],
      { id: 'judge-model' },
    );
    const model = scriptedModel([reply('{"id":"R-1","status":"shipped"}', { usage: { outputTokens: 10 } })]);
    const evaluate = [
      evaluators.schema(answer),
      evaluators.judge({ model: judgeModel, criteria: 'The status is plausible.' }),
    ];
    const { loop } = createTestLoop({ model, evaluate, limits: { maxOutputTokens: 50 } });

    const result = await loop.run({ goal: GOAL });

    expect(judgeModel.calls).toHaveLength(1);
    expect(result).toMatchObject({ stopReason: 'completed', output: { id: 'R-1', status: 'shipped' } });
    expect(result.usage).toMatchObject({ modelCalls: 2, outputTokens: 15 });
  });

  it('stops when cumulative output tokens reach maxOutputTokens, before running the requested tool', async () => {
    const { tool, executions } = recordingTool({});
    const model = scriptedModel([toolCall('lookup', { id: 'R-1' }, { usage: { outputTokens: 60 } })]);
    const { loop } = createTestLoop({ model, tools: [tool], limits: { maxOutputTokens: 50 } });

    const result = await loop.run({ goal: GOAL });

    expect(result).toMatchObject({ stopReason: 'budget_exhausted', status: 'failed', steps: 1 });
    expect(result.detail).toBe('output tokens 60 reached maxOutputTokens (50); raise limits.maxOutputTokens');
    expect(result.usage.outputTokens).toBe(60);
    expect(executions).toEqual([]);
    model.assertComplete();
  });

  it('stops when the cost from the `prices` table reaches maxCostUsd', async () => {
    const { tool, executions } = recordingTool({});
    // $1 per call: 100 input tokens at $10,000 per million.
    const model = scriptedModel(
      [toolCall('lookup', { id: 'R-1' }), toolCall('lookup', { id: 'R-2' }), reply('never requested')],
      { id: 'house-model' },
    );
    const { loop } = createTestLoop({
      model,
      tools: [tool],
      prices: { 'house-model': { inputPerMillion: 10_000, outputPerMillion: 0 } },
      limits: { maxCostUsd: 1.5 },
    });

    const result = await loop.run({ goal: GOAL });

    expect(result).toMatchObject({ stopReason: 'budget_exhausted', status: 'failed', steps: 2 });
    expect(result.detail).toBe('cost $2.000000 reached maxCostUsd ($1.5); raise limits.maxCostUsd');
    expect(result.usage.costUsd).toBeCloseTo(2, 12);
    expect(result.usage.modelCalls).toBe(2);
    // The first call's tool ran; the second call crossed the budget, so its tool did not.
    expect(executions).toEqual([{ id: 'R-1' }]);
    expect(model.remaining).toBe(1);
  });

  it('refuses the next call when a huge tool result pushes the input estimate past maxInputTokens', async () => {
    const { tool } = recordingTool({ respond: () => 'x'.repeat(40_000) });
    const model = scriptedModel([toolCall('lookup', { id: 'R-1' }), reply('never requested')]);
    const { loop } = createTestLoop({
      model,
      tools: [tool],
      limits: { maxInputTokens: 5_000, maxToolResultBytes: 100_000 },
    });

    const result = await loop.run({ goal: GOAL });

    expect(result).toMatchObject({ stopReason: 'budget_exhausted', status: 'failed', steps: 1 });
    expect(result.detail).toMatch(
      /^the next request \(~\d+ input tokens\) would take input tokens past maxInputTokens \(5000; used 100\); raise limits\.maxInputTokens$/,
    );
    expect(model.calls).toHaveLength(1);
    expect(model.remaining).toBe(1);
    expect(result.usage).toMatchObject({ inputTokens: 100, modelCalls: 1, toolCalls: 1 });
  });

  it('refuses even the first call when the goal alone is estimated over maxInputTokens', async () => {
    const model = scriptedModel([reply('never requested')]);
    const { loop } = createTestLoop({ model, limits: { maxInputTokens: 1_000 } });

    const result = await loop.run({ goal: `Summarise: ${'lorem ipsum '.repeat(2_000)}` });

    expect(result).toMatchObject({ stopReason: 'budget_exhausted', status: 'failed', steps: 0, output: null });
    expect(result.detail).toContain('maxInputTokens (1000; used 0)');
    expect(model.calls).toHaveLength(0);
    expect(result.usage).toMatchObject({ inputTokens: 0, outputTokens: 0, costUsd: 0, modelCalls: 0 });
  });
});

describe('no_progress', () => {
  it('nudges on a repeated identical tool call, then stops when the model repeats it again', async () => {
    const { tool, executions } = recordingTool({});
    const same = () => toolCall('lookup', { id: 'R-1' });
    const model = scriptedModel([same(), same(), same(), same()]);
    const { loop } = createTestLoop({ model, tools: [tool] });

    const result = await loop.run({ goal: GOAL });

    expect(result).toMatchObject({ stopReason: 'no_progress', status: 'failed', steps: 3 });
    expect(result.detail).toMatch(
      /^no progress after a nudge: repeated_tool_call: lookup was called with the same arguments and brought the same result 3 times/,
    );
    expect(transcriptText(requestAt(model, 2))).toContain(
      'You called a tool again with the same arguments and got the same result',
    );
    // Each repeat ran: only a result that did not change makes it a repeat.
    expect(executions).toHaveLength(3);
    expect(result.warnings).toContain('no-progress nudge at step 2: repeated_tool_call');
    expect(model.remaining).toBe(1);
  });
});
