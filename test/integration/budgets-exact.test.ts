/**
 * Budgets exact to the call: the pre-call estimate covers everything the next request carries, every
 * model call is counted, a model call has its own timeout, and tool calls are capped per run and per
 * reply — with the calls over a cap answered to the model as refused, never run.
 */
import { describe, expect, it } from 'vitest';
import { z } from 'zod';
import { evaluators, type Message } from 'loopstate';
import { emptyReply, reply, scriptedModel, toolCall, type ScriptStepResult } from 'loopstate/testing';
import { contentsWithRole, createTestLoop, recordingTool, requestAt } from './helpers.js';

const GOAL = 'Check the records';

/** The same estimate the runtime makes: ~4 characters a token, plus per-message framing. */
function estimatedTokens(messages: readonly Message[], toolSpecChars: number): number {
  let chars = toolSpecChars;
  for (const message of messages) {
    chars += (message.content ?? '').length;
    if (message.role === 'tool') chars += message.toolCallId.length;
    if (message.role === 'assistant')
      for (const call of message.toolCalls ?? []) chars += call.name.length + call.arguments.length + call.id.length;
  }
  return Math.ceil(chars / 4) + messages.length * 4;
}

describe('the pre-call input estimate covers what the next request will carry', () => {
  it('no request goes out that would take input tokens past maxInputTokens, even with answers to unrun calls and nudges', async () => {
    const { tool } = recordingTool({});
    // Ten calls per reply, all held back or refused, with long invalid arguments and empty replies between them.
    const wide = () =>
      toolCall(
        Array.from({ length: 10 }, (_, index) => ({
          name: 'lookup',
          args: { id: `R-${index}`, note: 'x'.repeat(200) },
        })),
      );
    const model = scriptedModel([wide(), emptyReply(), emptyReply(), wide(), reply('done')], { id: 'scripted' });
    const maxInputTokens = 4_000;
    const { loop } = createTestLoop({ model, tools: [tool], limits: { maxInputTokens, maxToolCallsPerReply: 2 } });

    const result = await loop.run({ goal: GOAL });

    const toolSpecChars = JSON.stringify(tool.spec).length;
    let spent = 0;
    for (const request of model.calls) {
      spent += estimatedTokens(request.messages, toolSpecChars);
      expect(spent).toBeLessThanOrEqual(maxInputTokens);
    }
    expect(['budget_exhausted', 'completed', 'no_progress']).toContain(result.stopReason);
  });
});

describe('the estimate is never below the request that goes out', () => {
  // A run with a nudge, a parse-error note, a refused duplicate, an argument repair and a reflection.
  const script = () => [
    toolCall('lookup', { id: 'A' }),
    toolCall('lookup', { id: 'A' }),
    emptyReply(),
    toolCall([
      { name: 'lookup', args: { id: 'B' } },
      { name: 'lookup', args: { id: 'B' } },
    ]),
    toolCall('lookup', '{"id": 5}'),
    reply('{"x":1}'),
    reply('{"y":1}'),
  ];
  const run = async (maxInputTokens: number) => {
    const { tool } = recordingTool({});
    const model = scriptedModel(script());
    const { loop } = createTestLoop({
      model,
      tools: [tool],
      limits: { maxInputTokens, maxRetries: 3 },
      noProgress: { sameParseError: 5, unchangedState: 5 },
      evaluate: [evaluators.schema(z.object({ y: z.number() }))],
    });
    return { result: await loop.run({ goal: GOAL }), model, toolSpecChars: JSON.stringify(tool.spec).length };
  };

  it('refuses each call whose request would take input tokens one past the budget, whatever feedback it carries', async () => {
    const full = await run(1_000_000);
    expect(full.result.stopReason).toBe('completed');
    const estimates = full.model.calls.map((request) => estimatedTokens(request.messages, full.toolSpecChars));
    expect(estimates).toHaveLength(7);
    for (let call = 1; call < estimates.length; call++) {
      // Every earlier call used 100 input tokens (the scripted default); call `call` alone is one token too many.
      const budget = 100 * call + (estimates[call] as number) - 1;
      const tight = await run(budget);
      expect(tight.model.calls.length, `call ${call} with a budget of ${budget}`).toBeLessThanOrEqual(call);
      expect(tight.result.stopReason).toBe('budget_exhausted');
    }
  });
});

describe('usage.modelCalls counts every call made', () => {
  it('counts a model call that a cancel interrupted', async () => {
    const controller = new AbortController();
    const model = scriptedModel([
      () =>
        new Promise<ScriptStepResult>(() => {
          controller.abort(new Error('user pressed stop'));
        }),
    ]);
    const { loop } = createTestLoop({ model });

    const result = await loop.run({ goal: GOAL, signal: controller.signal });

    expect(result.stopReason).toBe('cancelled');
    expect(result.usage.modelCalls).toBe(1);
  });
});

describe('limits.modelCallTimeoutMs', () => {
  it('a model call that hangs past its own timeout is a transport failure: retried, then the reply is used', async () => {
    const { loop, clock } = createTestLoop({
      model: scriptedModel([
        () =>
          new Promise<ScriptStepResult>(() => {
            clock.advance(5_000);
          }),
        reply('answered on the retry'),
      ]),
      limits: { modelCallTimeoutMs: 5_000 },
    });

    const result = await loop.run({ goal: GOAL });

    expect(result).toMatchObject({ stopReason: 'completed', output: 'answered on the retry' });
    expect(result.usage.modelCalls).toBe(2);
    const error = result.trace.find((event) => event.type === 'model-error');
    expect(error).toMatchObject({
      errorKind: 'timeout',
      message: 'the model call took longer than modelCallTimeoutMs (5000 ms)',
    });
  });

  it('the request signal the model gets is aborted when the call times out', async () => {
    let signal: AbortSignal | undefined;
    const { loop, clock } = createTestLoop({
      model: scriptedModel([
        (request) =>
          new Promise<ScriptStepResult>(() => {
            signal = request.signal;
            clock.advance(1_000);
          }),
        reply('ok'),
      ]),
      limits: { modelCallTimeoutMs: 1_000 },
    });

    await loop.run({ goal: GOAL });

    expect(signal?.aborted).toBe(true);
  });
});

describe('tool-call caps', () => {
  it('takes at most maxToolCallsPerReply calls from one reply; the rest are answered as refused, not run', async () => {
    const { tool, executions } = recordingTool({ name: 'write_row', access: 'write' });
    const model = scriptedModel([
      toolCall(Array.from({ length: 5_000 }, (_, index) => ({ name: 'write_row', args: { id: `row-${index}` } }))),
      reply('done'),
    ]);
    const { loop } = createTestLoop({
      model,
      tools: [tool],
      limits: { maxToolCallsPerReply: 3, maxInputTokens: 10_000_000 },
    });

    const result = await loop.run({ goal: GOAL });

    expect(executions).toHaveLength(3);
    const answers = contentsWithRole(requestAt(model, 1), 'tool');
    expect(answers).toHaveLength(5_000);
    expect(answers[3]).toBe(
      'Not executed: write_row — at most 3 tool calls are run from one reply. Call it again in your next reply if you still need it.',
    );
    expect(result).toMatchObject({ stopReason: 'completed', usage: { toolCalls: 3 } });
    expect(result.warnings).toContainEqual(
      expect.stringMatching(
        /^step 1: 4997 tool call\(s\) answered, not run: write_row \(over maxToolCallsPerReply\), /,
      ),
    );
  });

  it('stops with budget_exhausted when the model asks for tools after maxToolCalls ran, naming the option', async () => {
    const { tool, executions } = recordingTool({});
    const model = scriptedModel([
      toolCall('lookup', { id: 'A' }),
      toolCall('lookup', { id: 'B' }),
      toolCall('lookup', { id: 'C' }),
    ]);
    const { loop } = createTestLoop({ model, tools: [tool], limits: { maxToolCalls: 2 } });

    const result = await loop.run({ goal: GOAL });

    expect(executions).toHaveLength(2);
    expect(result).toMatchObject({
      stopReason: 'budget_exhausted',
      detail: "the model asked for more tool calls after 2 ran, the run's maxToolCalls (2); raise limits.maxToolCalls",
    });
  });

  it('by default the tool-call budget and the per-task bound scale with maxSteps: a 300-step loop of one call a step completes', async () => {
    const { tool, executions } = recordingTool({});
    const model = scriptedModel([
      ...Array.from({ length: 300 }, (_, index) => toolCall('lookup', { id: `R-${index}` })),
      reply('done'),
    ]);
    const { loop } = createTestLoop({ model, tools: [tool], limits: { maxSteps: 320, maxInputTokens: Infinity } });

    const result = await loop.run({ goal: GOAL });

    expect(result.stopReason).toBe('completed');
    expect(executions).toHaveLength(300);
  });

  it('runs only what is left of maxToolCalls from a wide reply, refusing the rest', async () => {
    const { tool, executions } = recordingTool({});
    const model = scriptedModel([
      toolCall('lookup', { id: 'A' }),
      toolCall([
        { name: 'lookup', args: { id: 'B' } },
        { name: 'lookup', args: { id: 'C' } },
      ]),
      reply('done'),
    ]);
    const { loop } = createTestLoop({ model, tools: [tool], limits: { maxToolCalls: 2 } });

    const result = await loop.run({ goal: GOAL });

    expect(executions.map((args) => args.id)).toEqual(['A', 'B']);
    expect(contentsWithRole(requestAt(model, 2), 'tool').at(-1)).toContain(
      "the run's tool-call budget (maxToolCalls 2) is spent",
    );
    expect(result.stopReason).toBe('completed');
  });
});

describe('policy.onDeny and the decide hook', () => {
  it("'tell_model' answers a denied call with the refusal; the model works around it and the run completes", async () => {
    const { tool: refund, executions } = recordingTool({ name: 'refund', access: 'write' });
    const { tool: escalate } = recordingTool({ name: 'escalate' });
    const seen: { runId: string; callId: string; tool: string }[] = [];
    const model = scriptedModel([
      toolCall('refund', { id: 'O-1' }, { id: 'c-refund' }),
      toolCall('escalate', { id: 'O-1' }),
      reply('Escalated to a person.'),
    ]);
    const { loop } = createTestLoop({
      model,
      tools: [refund, escalate],
      policy: {
        onDeny: 'tell_model',
        decide: ({ tool, runId, callId }) => (
          seen.push({ runId, callId, tool: tool.name }),
          tool.name === 'refund' ? 'deny' : undefined
        ),
      },
    });

    const result = await loop.run({ goal: GOAL, runId: 'run-42' });

    expect(executions).toEqual([]);
    expect(contentsWithRole(requestAt(model, 1), 'tool')[0]).toMatch(
      /^Not executed: tool refund is not permitted by the tool policy/,
    );
    expect(result.stopReason).toBe('completed');
    expect(seen[0]).toEqual({ runId: 'run-42', callId: 'c-refund', tool: 'refund' });
  });

  it("'stop' (the default) ends the run with permission_denied naming the tool", async () => {
    const { tool } = recordingTool({ name: 'refund', access: 'write' });
    const model = scriptedModel([toolCall('refund', { id: 'O-1' })]);
    const { loop } = createTestLoop({ model, tools: [tool], policy: { allow: ['read'] } });

    const result = await loop.run({ goal: GOAL });

    expect(result.stopReason).toBe('permission_denied');
    expect(result.detail).toMatch(/^the policy denied tool "refund"/);
  });
});

describe('several judges', () => {
  it('every judge call is counted in usage.modelCalls', async () => {
    const judgeA = scriptedModel([reply('{"passed": true, "reason": "ok"}')], { id: 'judge-a' });
    const judgeB = scriptedModel([reply('{"passed": true, "reason": "ok"}')], { id: 'judge-b' });
    const model = scriptedModel([reply('{"owner":"ops"}')]);
    const { loop } = createTestLoop({
      model,
      evaluate: [
        evaluators.json(),
        evaluators.judge({ model: judgeA, criteria: 'a', name: 'a' }),
        evaluators.judge({ model: judgeB, criteria: 'b', name: 'b' }),
      ],
    });

    const result = await loop.run({ goal: GOAL });

    expect(result).toMatchObject({ stopReason: 'completed', usage: { modelCalls: 3 } });
  });
});

describe("LLM judges: every call counted, every failure the run's", () => {
  const judged = (...models: ReturnType<typeof scriptedModel>[]) => [
    evaluators.json(),
    ...models.map((model, index) => evaluators.judge({ model, criteria: 'names an owner', name: `judge-${index}` })),
  ];

  it("a cancel while the second judge is thinking keeps the first judge's tokens and counts both calls", async () => {
    const controller = new AbortController();
    const first = scriptedModel(
      [reply('{"passed": true, "reason": "ok"}', { usage: { inputTokens: 70, outputTokens: 7 } })],
      { id: 'scripted' },
    );
    const second = scriptedModel(
      [() => new Promise<ScriptStepResult>(() => controller.abort(new Error('user pressed stop')))],
      { id: 'scripted' },
    );
    const model = scriptedModel([reply('{"owner":"ops"}')]);
    const { loop } = createTestLoop({ model, evaluate: judged(first, second) });

    const result = await loop.run({ goal: GOAL, signal: controller.signal });

    expect(result.stopReason).toBe('cancelled');
    expect(result.usage).toMatchObject({ modelCalls: 3, inputTokens: 100 + 70, outputTokens: 20 + 7 });
  });

  it('a judge the input budget cannot pay for ends the run with budget_exhausted; the main model is not told to "fix" it', async () => {
    const judge = scriptedModel([reply('{"passed": true, "reason": "ok"}')], { id: 'scripted' });
    const model = scriptedModel([reply('{"owner":"ops"}'), reply('never asked')]);
    // Room for the main call (~30 tokens estimated, 100 used), not for the judge's request on top (~300).
    const { loop } = createTestLoop({ model, evaluate: judged(judge), limits: { maxInputTokens: 380 } });

    const result = await loop.run({ goal: GOAL });

    expect(result.stopReason).toBe('budget_exhausted');
    expect(judge.calls).toHaveLength(0);
    expect(model.calls).toHaveLength(1);
  });

  it('a judge that hangs is cut off after modelCallTimeoutMs and retried like any transport failure', async () => {
    const { loop, clock } = createTestLoop({
      model: scriptedModel([reply('{"owner":"ops"}')]),
      evaluate: judged(
        scriptedModel(
          [() => new Promise<ScriptStepResult>(() => clock.advance(2_000)), reply('{"passed": true, "reason": "ok"}')],
          { id: 'scripted' },
        ),
      ),
      limits: { modelCallTimeoutMs: 2_000 },
    });

    const result = await loop.run({ goal: GOAL });

    expect(result).toMatchObject({ stopReason: 'completed', usage: { modelCalls: 3 } });
    expect(result.warnings.some((warning) => warning.includes('took longer than modelCallTimeoutMs (2000 ms)'))).toBe(
      true,
    );
  });

  it('a judge adapter that throws a plain Error (a 401 from your own client) is fatal, never a reflection', async () => {
    const adapter = { id: 'scripted', generate: () => Promise.reject(new Error('401 Unauthorized')) };
    const model = scriptedModel([reply('{"owner":"ops"}'), reply('never asked')]);
    const { loop } = createTestLoop({
      model,
      evaluate: [evaluators.json(), evaluators.judge({ model: adapter, criteria: 'c' })],
    });

    const result = await loop.run({ goal: GOAL });

    expect(result).toMatchObject({ stopReason: 'fatal_error', error: { code: 'judge_failed' } });
    expect(result.detail).toContain('LLM judge "judge" failed: ');
    expect(model.calls).toHaveLength(1);
  });
});

describe('a run that completes with a budget passed by its last call', () => {
  it('says so in a warning: three judges under maxCostUsd 0.5 where the third crosses it', async () => {
    const judge = () =>
      scriptedModel([reply('{"passed":true,"reason":"ok"}', { usage: { inputTokens: 100_000, outputTokens: 10 } })], {
        id: 'gpt-4.1',
      });
    const model = scriptedModel([reply('{"owner":"ops"}')]);
    const { loop } = createTestLoop({
      model,
      evaluate: [
        evaluators.json(),
        ...[judge(), judge(), judge()].map((judgeModel, index) =>
          evaluators.judge({ model: judgeModel, criteria: 'c', name: `j${index}` }),
        ),
      ],
      limits: { maxCostUsd: 0.5, maxInputTokens: Infinity },
    });

    const result = await loop.run({ goal: GOAL });

    expect(result.stopReason).toBe('completed');
    expect(result.usage.costUsd).toBeGreaterThan(0.5);
    // Each judge call was made while the budget stood; the one that crossed it is named.
    expect(result.warnings).toContainEqual(
      expect.stringMatching(
        /^completed, but its last model call went over a budget: cost \$0\.6\d+ passed maxCostUsd \(\$0\.5\)$/,
      ),
    );
  });
});
