/**
 * Edge cases found in review, each through the full loop: withheld tools the task does not need,
 * repeats counted by what ran, interruptions during side effects, task-boundary estimates,
 * per-task partial output, unpriced judges, malformed evaluator usage and pathological arguments.
 */
import { describe, expect, it } from 'vitest';
import { z } from 'zod';
import { defineTool, evaluators, type Evaluator } from 'loopstate';
import { modelError, reply, scriptedModel, toolCall } from 'loopstate/testing';
import { contentsWithRole, createTestLoop, recordingTool, requestAt, transcriptText } from './helpers.js';

const GOAL = 'Find the owner of record R-1';

describe('a withheld tool the task does not require', () => {
  it('is answered as unavailable and the run goes on with another tool', async () => {
    const { tool: flaky } = recordingTool({
      name: 'flaky',
      respond: () => {
        throw new Error('service down');
      },
    });
    const { tool: backup, executions } = recordingTool({ name: 'backup' });
    const model = scriptedModel([
      toolCall('flaky', { id: '1' }),
      toolCall('flaky', { id: '2' }),
      toolCall('flaky', { id: '3' }),
      toolCall('flaky', { id: '4' }), // circuit open now: answered, not run
      toolCall('backup', { id: 'R-1' }),
      reply('The owner is ops.'),
    ]);
    const { loop } = createTestLoop({
      model,
      tools: [flaky, backup],
      tasks: [{ id: 'find', prompt: GOAL, requires: ['backup'] }],
    });

    const result = await loop.run({ goal: GOAL });

    expect(result).toMatchObject({ stopReason: 'completed', output: 'The owner is ops.' });
    expect(executions).toEqual([{ id: 'R-1' }]);
    expect(transcriptText(requestAt(model, 4))).toMatch(/flaky/);
    expect(requestAt(model, 4).at(-1)).toMatchObject({ role: 'tool', content: expect.stringMatching(/unavailable/i) });
  });
});

describe('repeats count calls that ran', () => {
  it('a call held back beside an invalid sibling is not a repeat when it is asked for again', async () => {
    const { tool, executions } = recordingTool({ input: z.object({ id: z.string() }) });
    const model = scriptedModel([
      toolCall([
        { name: 'lookup', args: { id: 7 } },
        { name: 'lookup', args: { id: 'R-1' } },
      ]),
      toolCall('lookup', { id: 'R-1' }),
      reply('The owner is ops.'),
    ]);
    const { loop } = createTestLoop({ model, tools: [tool], noProgress: { repeatedToolCall: 2 } });

    const result = await loop.run({ goal: GOAL });

    expect(result).toMatchObject({ stopReason: 'completed', warnings: [] });
    expect(executions).toEqual([{ id: 'R-1' }]);
  });

  it('the same call twice in one reply runs once; the duplicate is answered, not run', async () => {
    const { tool, executions } = recordingTool({});
    const model = scriptedModel([
      toolCall([
        { name: 'lookup', args: { id: 'R-1' } },
        { name: 'lookup', args: { id: 'R-1' } },
      ]),
      reply('The owner is ops.'),
    ]);
    const { loop } = createTestLoop({ model, tools: [tool], noProgress: { repeatedToolCall: 2 } });

    const result = await loop.run({ goal: GOAL });

    expect(executions).toEqual([{ id: 'R-1' }]);
    expect(contentsWithRole(requestAt(model, 1), 'tool')).toContain(
      'Not executed: the same call (lookup with the same arguments) appears earlier in this reply; its result is the one to use.',
    );
    expect(result.warnings).toContain('step 1: 1 tool call(s) answered, not run: lookup (duplicate in the reply)');
    expect(result.stopReason).toBe('completed');
  });
});

describe('an interruption during a side-effecting call', () => {
  it('a cancel stops the run as cancelled and names the call whose outcome is unknown', async () => {
    const controller = new AbortController();
    const write = defineTool({
      name: 'send_invoice',
      description: 'Sends an invoice',
      input: z.object({ id: z.string() }),
      access: 'write',
      execute: (_args, { signal }) =>
        new Promise((_, reject) => {
          signal.addEventListener('abort', () => reject(signal.reason));
          controller.abort(new Error('user pressed stop'));
        }),
    });
    const model = scriptedModel([toolCall('send_invoice', { id: 'R-1' })]);
    const { loop } = createTestLoop({ model, tools: [write] });

    const result = await loop.run({ goal: 'Send the invoice', signal: controller.signal });

    expect(result).toMatchObject({ stopReason: 'cancelled', status: 'failed', detail: 'cancelled: user pressed stop' });
    expect(result.usage.toolCalls).toBe(1);
    expect(
      result.warnings.some((warning) =>
        /send_invoice .*outcome unknown; check it by idempotency key run-test:1:call_0_0/.test(warning),
      ),
    ).toBe(true);
  });
});

describe('task boundaries', () => {
  it("checks the next task's own first request against maxInputTokens, not the last one of the task before", async () => {
    const { tool } = recordingTool({ respond: () => 'x'.repeat(40_000) });
    const model = scriptedModel([
      toolCall('lookup', { id: 'R-1' }, { usage: { inputTokens: 10, outputTokens: 5 } }),
      reply('{"size":"large"}', { usage: { inputTokens: 10, outputTokens: 5 } }),
      reply('done', { usage: { inputTokens: 10, outputTokens: 5 } }),
    ]);
    const { loop } = createTestLoop({
      model,
      tools: [tool],
      limits: { maxInputTokens: 11_000 },
      tasks: [
        { id: 'read', prompt: 'Read the record', evaluate: [evaluators.json()] },
        { id: 'answer', prompt: 'Answer briefly' },
      ],
    });

    const result = await loop.run({ goal: GOAL });

    expect(result).toMatchObject({ stopReason: 'completed', output: 'done' });
    model.assertComplete();
  });

  it("returns the unfinished task's own last reply as partial output, never an earlier task's answer", async () => {
    const model = scriptedModel([reply('{"a":1}')]);
    const { loop } = createTestLoop({
      model,
      limits: { maxSteps: 1 },
      tasks: [
        { id: 'first', prompt: 'Give JSON', evaluate: [evaluators.json()] },
        { id: 'second', prompt: 'Then this' },
      ],
    });

    const result = await loop.run({ goal: GOAL });

    expect(result).toMatchObject({ stopReason: 'max_steps', output: null, taskOutputs: { first: { a: 1 } } });
  });
});

describe('evaluators that spend', () => {
  it('warns when a judge model has no price, since maxCostUsd cannot see its spend', async () => {
    const judgeModel = scriptedModel([reply('{"passed": true, "reason": "ok"}')], { id: 'unpriced-judge' });
    const model = scriptedModel([reply('{"owner":"ops"}')]);
    const { loop } = createTestLoop({
      model,
      evaluate: [evaluators.json(), evaluators.judge({ model: judgeModel, criteria: 'names an owner' })],
    });

    const result = await loop.run({ goal: GOAL });

    expect(result.stopReason).toBe('completed');
    expect(result.warnings).toContain(
      'no price for model "unpriced-judge": its cost counts as $0, so maxCostUsd cannot stop it; add it to `prices`',
    );
  });

  it('prices a judge by its own model id', async () => {
    const judgeModel = scriptedModel(
      [reply('{"passed": true, "reason": "ok"}', { usage: { inputTokens: 1_000_000, outputTokens: 0 } })],
      { id: 'judge-model' },
    );
    const model = scriptedModel([reply('{"owner":"ops"}', { usage: { inputTokens: 0, outputTokens: 0 } })]);
    const { loop } = createTestLoop({
      model,
      prices: {
        scripted: { inputPerMillion: 0, outputPerMillion: 0 },
        'judge-model': { inputPerMillion: 3, outputPerMillion: 0 },
      },
      evaluate: [evaluators.json(), evaluators.judge({ model: judgeModel, criteria: 'names an owner' })],
    });

    const result = await loop.run({ goal: GOAL });

    expect(result.usage.costUsd).toBeCloseTo(3, 9);
  });

  it('a custom evaluator reporting malformed usage ends the run with fatal_error, naming the field', async () => {
    const lying: Evaluator = {
      name: 'lying',
      kind: 'rule',
      evaluate: () => ({
        passed: true,
        reason: 'ok',
        parsed: null,
        usage: { inputTokens: '500' as unknown as number, outputTokens: -1 },
      }),
    };
    const model = scriptedModel([reply('{"owner":"ops"}')]);
    const { loop } = createTestLoop({ model, evaluate: [lying] });

    const result = await loop.run({ goal: GOAL });

    expect(result.stopReason).toBe('fatal_error');
    expect(result.detail).toMatch(/evaluator usage .* malformed: inputTokens: .*; outputTokens: /);
    expect(typeof result.usage.inputTokens).toBe('number');
  });
});

describe('pathological tool arguments', () => {
  it('arguments nested too deep to canonicalise are still fingerprinted, never a fatal error', async () => {
    const { tool, executions } = recordingTool({ input: z.object({ q: z.any() }) });
    const deep = `${'['.repeat(20_000)}${']'.repeat(20_000)}`;
    const model = scriptedModel([toolCall('lookup', `{"q": ${deep}}`), reply('done')]);
    const { loop } = createTestLoop({ model, tools: [tool] });

    const result = await loop.run({ goal: GOAL });

    expect(result.stopReason).not.toBe('fatal_error');
    expect(['completed', 'retries_exhausted']).toContain(result.stopReason);
    expect(executions.length).toBeLessThanOrEqual(1);
  });
});

describe('what reaches the model', () => {
  it('sends the instructions as the system message of every request', async () => {
    const { tool } = recordingTool({});
    const model = scriptedModel([toolCall('lookup', { id: 'R-1' }), reply('The owner is ops.')]);
    const { loop } = createTestLoop({ model, tools: [tool], instructions: 'Answer in one sentence.' });

    await loop.run({ goal: GOAL });

    for (const index of [0, 1])
      expect(requestAt(model, index)[0]).toEqual({ role: 'system', content: 'Answer in one sentence.' });
  });

  it('warns when a reply asks for more tool calls than maxParallelTools, and runs them all', async () => {
    const { tool, executions } = recordingTool({});
    const calls = ['a', 'b', 'c'].map((id) => ({ name: 'lookup', args: { id } }));
    const model = scriptedModel([toolCall(calls), reply('done')]);
    const { loop } = createTestLoop({ model, tools: [tool], limits: { maxParallelTools: 2 } });

    const result = await loop.run({ goal: GOAL });

    expect(executions).toHaveLength(3);
    expect(result.warnings).toContain('step 1: the model requested 3 tool calls; ran at most 2 at a time');
  });
});

describe('calls held back by a nudge', () => {
  it('are answered as held back, not as invalid, when the state stopped changing', async () => {
    const { tool, executions } = recordingTool({ respond: () => ({ owner: 'ops' }) });
    const model = scriptedModel([
      toolCall('lookup', { id: 'R-1' }),
      toolCall('lookup', { id: 'R-1' }),
      toolCall('lookup', { id: 'R-1' }),
      reply('The owner is ops.'),
    ]);
    const { loop } = createTestLoop({
      model,
      tools: [tool],
      noProgress: { repeatedToolCall: 100, unchangedState: 2, duplicateObservation: 100 },
    });

    const result = await loop.run({ goal: GOAL });

    expect(executions).toHaveLength(2);
    expect(result.warnings).toContain('no-progress nudge at step 3: unchanged_state');
    expect(contentsWithRole(requestAt(model, 3), 'tool').at(-1)).toBe(
      'Not executed: this reply was held back because the loop is not making progress (see the note below). Call it again if you still need it.',
    );
    expect(result.stopReason).toBe('completed');
  });
});

describe('an LLM judge with a transport error', () => {
  const judged = (judgeModel: ReturnType<typeof scriptedModel>) => [
    evaluators.json(),
    evaluators.judge({ model: judgeModel, criteria: 'names an owner' }),
  ];

  it('is retried with backoff in its own layer; the main model is not asked to fix its answer', async () => {
    const judgeModel = scriptedModel(
      [modelError({ status: 429, retryAfterMs: 1_000 }), reply('{"passed": true, "reason": "ok"}')],
      { id: 'judge-model' },
    );
    const model = scriptedModel([reply('{"owner":"ops"}')]);
    const { loop, clock } = createTestLoop({
      model,
      evaluate: judged(judgeModel),
      prices: { 'judge-model': { inputPerMillion: 1, outputPerMillion: 1 } },
    });

    const result = await loop.run({ goal: GOAL });

    expect(result).toMatchObject({ stopReason: 'completed', output: { owner: 'ops' } });
    expect(judgeModel.calls).toHaveLength(2);
    expect(model.calls).toHaveLength(1);
    expect(clock.now()).toBeGreaterThanOrEqual(1_000);
    expect(result.warnings.some((warning) => warning.startsWith('task main: LLM judge "judge" transport error'))).toBe(
      true,
    );
    // Every judge call is a model call, the failed attempt included.
    expect(result.usage.modelCalls).toBe(3);
  });

  it('ends the run with fatal_error once one judge call has failed maxTransportAttempts times in a row', async () => {
    const judgeModel = scriptedModel(
      [modelError({ status: 503 }), modelError({ status: 503 }), modelError({ status: 503 })],
      { id: 'judge-model' },
    );
    const model = scriptedModel([reply('{"owner":"ops"}')]);
    const { loop } = createTestLoop({ model, evaluate: judged(judgeModel), limits: { maxTransportAttempts: 3 } });

    const result = await loop.run({ goal: GOAL });

    expect(result.stopReason).toBe('fatal_error');
    expect(result.detail).toMatch(
      /^run faulted: ModelCallError: 3rd consecutive transport failure of LLM judge "judge" \(HTTP 503\); raise limits\.maxTransportAttempts \(3\)\. Last error: /,
    );
    expect(judgeModel.calls).toHaveLength(3);
    expect(model.calls).toHaveLength(1);
    expect(result.usage.modelCalls).toBe(4);
  });

  it('gives each judge call its own attempts: three evaluations whose judge fails once first all go through', async () => {
    // Each evaluation's judge fails once before it answers; the answer changes, so it is reflected each time.
    const judgeModel = scriptedModel(
      [
        modelError({ status: 503 }),
        reply('{"passed": false, "reason": "no owner"}'),
        modelError({ status: 503 }),
        reply('{"passed": false, "reason": "no owner yet"}'),
        modelError({ status: 503 }),
        reply('{"passed": true, "reason": "ok"}'),
      ],
      { id: 'judge-model' },
    );
    const model = scriptedModel([reply('{"owner":"a"}'), reply('{"owner":"b"}'), reply('{"owner":"c"}')]);
    const { loop } = createTestLoop({ model, evaluate: judged(judgeModel), limits: { maxTransportAttempts: 2 } });

    const result = await loop.run({ goal: GOAL });

    expect(result).toMatchObject({ stopReason: 'completed', output: { owner: 'c' } });
    judgeModel.assertComplete();
    // Three decisions and six judge calls, the three failed ones included.
    expect(result.usage.modelCalls).toBe(3 + 6);
  });

  it("counts judge retries in the run-wide maxTransportRetries: with 2, the third evaluation's 503 has none left", async () => {
    const judgeModel = scriptedModel(
      [
        modelError({ status: 503 }),
        reply('{"passed": false, "reason": "no owner"}'),
        modelError({ status: 503 }),
        reply('{"passed": false, "reason": "no owner yet"}'),
        modelError({ status: 503 }),
        reply('{"passed": true, "reason": "ok"}'),
      ],
      { id: 'judge-model' },
    );
    const model = scriptedModel([reply('{"owner":"a"}'), reply('{"owner":"b"}'), reply('{"owner":"c"}')]);
    const { loop } = createTestLoop({ model, evaluate: judged(judgeModel), limits: { maxTransportRetries: 2 } });

    const result = await loop.run({ goal: GOAL });

    expect(result.stopReason).toBe('fatal_error');
    expect(result.detail).toContain(
      `LLM judge "judge" failed with the run's transport retries spent (2 of maxTransportRetries 2) (HTTP 503); raise limits.maxTransportRetries. Last error: `,
    );
    // Two retries were paid in the first two evaluations; the third evaluation's 503 has none left.
    expect(judgeModel.calls).toHaveLength(5);
  });

  it('a judge whose reply is no verdict, or a 401, ends the run with fatal_error: it is never reflected to the main model', async () => {
    for (const judgeStep of [reply('Looks fine to me!'), modelError({ status: 401, message: 'bad key' })]) {
      const judgeModel = scriptedModel([judgeStep], { id: 'judge-model' });
      const model = scriptedModel([reply('{"owner":"ops"}'), reply('never asked')]);
      const { loop } = createTestLoop({ model, evaluate: judged(judgeModel) });

      const result = await loop.run({ goal: GOAL });

      expect(result.stopReason).toBe('fatal_error');
      expect(result.error?.code).toMatch(/^(judge_invalid_verdict|model_auth)$/);
      expect(model.calls).toHaveLength(1);
      expect(result.usage.modelCalls).toBe(2);
    }
  });

  it('checks the budget before each judge: a second judge is not paid once the first spent the budget', async () => {
    const expensive = scriptedModel(
      [reply('{"passed": true, "reason": "ok"}', { usage: { inputTokens: 100, outputTokens: 100 } })],
      { id: 'judge-a' },
    );
    const second = scriptedModel([reply('{"passed": true, "reason": "ok"}')], { id: 'judge-b' });
    const model = scriptedModel([reply('{"owner":"ops"}', { usage: { inputTokens: 10, outputTokens: 10 } })]);
    const { loop } = createTestLoop({
      model,
      evaluate: [
        evaluators.json(),
        evaluators.judge({ model: expensive, criteria: 'a', name: 'a' }),
        evaluators.judge({ model: second, criteria: 'b', name: 'b' }),
      ],
      prices: {
        'judge-a': { inputPerMillion: 1_000, outputPerMillion: 1_000 },
        'judge-b': { inputPerMillion: 1_000, outputPerMillion: 1_000 },
      },
      limits: { maxCostUsd: 0.1 },
    });

    const result = await loop.run({ goal: GOAL });

    expect(second.calls).toHaveLength(0);
    expect(result.stopReason).toBe('budget_exhausted');
    expect(result.usage.costUsd).toBeCloseTo(0.2 + (10 * 0.4 + 10 * 1.6) / 1e6, 9);
  });
});
