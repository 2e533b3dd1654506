/**
 * Secrets never leave a run: through the full loop, nothing secret reaches `result.trace`,
 * `result.detail`, `result.warnings`, `result.error` or an `onEvent` sink, while the text around a
 * secret and the usage counters stay readable and the model's own output stays untouched.
 * Non-Error throws are described in words, never as "undefined".
 */
import { describe, expect, it } from 'vitest';
import { z } from 'zod';
import { evaluators, ModelCallError, type LoopConfig, type Model, type RunResult, type TraceEvent } from 'loopstate';
import { modelError, reply, scriptedModel, toolCall } from 'loopstate/testing';
import { createTestLoop, recordingTool, requestAt, transcriptText } from './helpers.js';

const GOAL = 'Rotate the deploy credentials';
const JWT = 'eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiJkZXBsb3kifQ.dozjgNryP4J3jVmNHl0w5N_XgL0n3I9PlFUP0THsR8U';

/** Runs a loop with a recording `onEvent` sink; returns the result and every event the sink saw. */
async function runWithSink(config: LoopConfig, goal = GOAL): Promise<{ result: RunResult; sunk: TraceEvent[] }> {
  const sunk: TraceEvent[] = [];
  const { loop } = createTestLoop({ ...config, trace: { onEvent: (event) => sunk.push(event) } });
  const result = await loop.run({ goal });
  return { result, sunk };
}

/** Everything of a run that leaves it for logs and callers, as one text (the output is the user's own data). */
function leavingText({ result, sunk }: { result: RunResult; sunk: TraceEvent[] }): string {
  return JSON.stringify({
    trace: result.trace,
    detail: result.detail,
    warnings: result.warnings,
    error: result.error,
    sunk,
  });
}

function expectNoneOf(secrets: readonly string[], run: { result: RunResult; sunk: TraceEvent[] }): void {
  const text = leavingText(run);
  for (const secret of secrets) expect(text).not.toContain(secret);
  expect(run.sunk.length).toBeGreaterThan(0);
  expect(run.sunk).toEqual(run.result.trace);
}

describe('tool arguments with secret key names', () => {
  it('reach the tool whole but the trace only as [redacted], usage counters kept', async () => {
    const secrets = {
      aws_secret_access_key: 'wJalrXUtnFEMI-K7MDENG-bPxRfiCY',
      secretAccessKey: 'AbCdEf0123456789xyz',
      passphrase: 'correct horse battery',
      jwt: 'opaque-jwt-value-123',
    };
    const { tool, executions } = recordingTool({
      name: 'rotate_credentials',
      input: z.object({
        region: z.string(),
        aws_secret_access_key: z.string(),
        secretAccessKey: z.string(),
        passphrase: z.string(),
        jwt: z.string(),
      }),
      respond: () => ({ rotated: true }),
    });
    const model = scriptedModel([
      toolCall('rotate_credentials', { region: 'eu-west-1', ...secrets }),
      reply('Rotated.'),
    ]);

    const run = await runWithSink({ model, tools: [tool] });

    expect(run.result).toMatchObject({ stopReason: 'completed', output: 'Rotated.' });
    expect(executions).toEqual([{ region: 'eu-west-1', ...secrets }]);
    expectNoneOf(Object.values(secrets), run);
    const step = run.result.trace.find((event) => event.type === 'step-end' && event.toolCalls.length > 0);
    expect(step).toMatchObject({
      inputTokens: 100,
      outputTokens: 20,
      toolCalls: [
        {
          name: 'rotate_credentials',
          argumentsSummary: expect.stringContaining(
            '"region":"eu-west-1","aws_secret_access_key":"[redacted]"',
          ) as unknown,
        },
      ],
    });
    expect(run.result.trace.at(-1)).toMatchObject({ type: 'run-end', usage: { inputTokens: 200, outputTokens: 40 } });
  });

  it('are redacted in raw arguments that never parsed as JSON', async () => {
    const { tool } = recordingTool({ name: 'login', input: z.object({ user: z.string(), password: z.string() }) });
    const model = scriptedModel([
      toolCall('login', '{"user":"ada","password":"hunter2-secret'),
      reply('Could not log in.'),
    ]);

    const run = await runWithSink({ model, tools: [tool] });

    expectNoneOf(['hunter2-secret'], run);
    expect(JSON.stringify(run.result.trace)).toContain('\\"password\\":\\"[redacted]\\"');
  });
});

describe('an argument repair', () => {
  it('names the field error in its retry event, redacted, and a tool name that looks like a secret too', async () => {
    const key = 'sk-live-4eC39HqLyjWDarjtT1zdp7dc';
    const { tool } = recordingTool({
      input: z.object({
        id: z.string().regex(/^R-\d+$/, { error: (issue) => `not a record id: ${String(issue.input)}` }),
      }),
    });
    const model = scriptedModel([
      toolCall([
        { name: 'lookup', args: { id: key } },
        { name: key, args: {} },
      ]),
      toolCall('lookup', { id: 'R-1' }),
      reply('Found it.'),
    ]);

    const run = await runWithSink({ model, tools: [tool] });

    expect(run.result.stopReason).toBe('completed');
    expectNoneOf(['4eC39HqLyjWDarjtT1zdp7dc'], run);
    const repair = run.result.trace.find((event) => event.type === 'retry');
    expect(repair).toMatchObject({
      layer: 'argument_repair',
      argumentErrors: [
        { name: 'lookup', error: 'id: not a record id: [redacted]' },
        { name: '[redacted]', error: 'no tool of that name' },
      ],
    });
  });
});

describe("a provider's 401 quoting the key", () => {
  const message =
    'Incorrect API key provided: Bearer sk-live-abc123def456ghi. You can find your API key at https://platform.example.com/keys';

  it('is redacted in the detail, the error, the model-error trace event and the sink', async () => {
    const model: Model = {
      id: 'gpt-4.1-mini',
      generate: () => Promise.reject(new ModelCallError({ kind: 'auth', status: 401, message })),
    };

    const run = await runWithSink({ model });

    expect(run.result).toMatchObject({ stopReason: 'fatal_error', status: 'failed' });
    expectNoneOf(['sk-live-abc123def456ghi', 'abc123def456ghi'], run);
    const redacted =
      'Incorrect API key provided: Bearer [redacted]. You can find your API key at https://platform.example.com/keys';
    expect(run.result.detail).toBe(`model call failed: ${redacted}`);
    expect(run.result.error).toEqual({ name: 'ModelCallError', message: redacted, code: 'model_auth' });
    expect(run.result.trace.find((event) => event.type === 'model-error')).toMatchObject({
      errorKind: 'auth',
      message: redacted,
    });
  });

  it('is redacted when it is a transient error retried and then exhausted', async () => {
    const model = scriptedModel([
      modelError({ status: 503, message: 'upstream rejected Authorization: Bearer sk-proj-Zz9Yy8Xx7Ww6' }),
      modelError({ status: 503, message: 'upstream rejected Authorization: Bearer sk-proj-Zz9Yy8Xx7Ww6' }),
    ]);

    const run = await runWithSink({ model, limits: { maxTransportAttempts: 2 } });

    expect(run.result.stopReason).toBe('retries_exhausted');
    expectNoneOf(['sk-proj-Zz9Yy8Xx7Ww6'], run);
    expect(run.result.detail).toBe(
      'task main: 2nd consecutive transport failure of model call 1 (HTTP 503); raise limits.maxTransportAttempts (2). Last error: upstream rejected Authorization: [redacted]',
    );
  });
});

describe('a tool that throws with a JWT in its message', () => {
  it('keeps the JWT out of the trace even when the model quotes it, and leaves the output as the model wrote it', async () => {
    const { tool } = recordingTool({
      name: 'deploy',
      respond: () => {
        throw new Error(`token rejected: ${JWT}`);
      },
    });
    const quoting = (request: Parameters<Model['generate']>[0]) =>
      reply(`The deploy failed: ${request.messages.at(-1)?.content ?? ''}`);
    const model = scriptedModel([toolCall('deploy', { id: 'web' }), quoting]);

    const run = await runWithSink({ model, tools: [tool] });

    expect(run.result.stopReason).toBe('completed');
    expectNoneOf([JWT, JWT.split('.')[2] ?? JWT], run);
    expect(run.result.output).toContain(JWT);
    const finalStep = run.result.trace.filter((event) => event.type === 'step-end').at(-1);
    expect(finalStep).toMatchObject({
      replySummary: 'The deploy failed: Tool deploy failed: token rejected: [redacted]',
    });
  });

  it('keeps a secret out of an evaluator failure reason, its trace event and the stop detail', async () => {
    const model = scriptedModel([reply('draft one'), reply('draft two')]);
    const failing = evaluators.rule(() => {
      throw new Error('lookup failed for postgres://svc:pa55word@db.internal/app');
    }, 'the draft names an owner');

    const run = await runWithSink({ model, evaluate: [failing], limits: { maxRetries: 1 } });

    expect(run.result.stopReason).toBe('retries_exhausted');
    expectNoneOf(['pa55word'], run);
    expect(run.result.detail).toContain('postgres://svc:[redacted]@db.internal/app');
    expect(run.result.trace.find((event) => event.type === 'evaluation-end')).toMatchObject({
      reason: expect.stringContaining('svc:[redacted]@db.internal') as unknown,
    });
  });
});

describe('user-supplied keys and patterns', () => {
  it('redact.keys and redact.patterns are applied everywhere the built-in rules are', async () => {
    const { tool, executions } = recordingTool({
      name: 'open_case',
      input: z.object({ customer_ssn: z.string(), summary: z.string() }),
    });
    const model = scriptedModel([
      toolCall('open_case', { customer_ssn: '078-05-1120', summary: 'card CARD-4111 blocked' }),
      reply('Case opened for CARD-4111.'),
    ]);

    const run = await runWithSink(
      { model, tools: [tool], redact: { keys: ['customer_ssn'], patterns: [/\bCARD-\d{4}\b/] } },
      'Open a case for CARD-4111',
    );

    expect(executions).toEqual([{ customer_ssn: '078-05-1120', summary: 'card CARD-4111 blocked' }]);
    expectNoneOf(['078-05-1120', 'CARD-4111'], run);
    expect(run.result.trace[0]).toMatchObject({ type: 'run-start', goalSummary: 'Open a case for [redacted]' });
    expect(run.result.output).toBe('Case opened for CARD-4111.');
  });

  it('without the option, the same key is kept (it is not a built-in secret)', async () => {
    const { tool } = recordingTool({ name: 'open_case', input: z.object({ customer_ssn: z.string() }) });
    const model = scriptedModel([toolCall('open_case', { customer_ssn: '078-05-1120' }), reply('ok')]);

    const run = await runWithSink({ model, tools: [tool] });

    expect(leavingText(run)).toContain('078-05-1120');
  });
});

describe('warnings and faults', () => {
  it("redacts a judge's transport error in the retry warning", async () => {
    const judgeModel = scriptedModel(
      [
        modelError({ status: 429, message: 'rate limited for key sk-live-judge42abc' }),
        reply('{"passed": true, "reason": "ok"}'),
      ],
      { id: 'judge-model' },
    );
    const model = scriptedModel([reply('{"owner":"ops"}')]);

    const run = await runWithSink({
      model,
      evaluate: [evaluators.json(), evaluators.judge({ model: judgeModel, criteria: 'names an owner' })],
    });

    expect(run.result.stopReason).toBe('completed');
    expectNoneOf(['sk-live-judge42abc'], run);
    expect(run.result.warnings).toContainEqual(
      expect.stringMatching(/LLM judge "judge" transport error \(HTTP 429: rate limited for key \[redacted\]\)/),
    );
  });

  it('redacts a throwing policy hook in the detail and the error', async () => {
    const { tool, executions } = recordingTool({});
    const model = scriptedModel([toolCall('lookup', { id: 'R-1' })]);
    const decide = () => {
      throw new Error('policy service https://ops:Sup3rS3cret@policy.internal refused');
    };

    const run = await runWithSink({ model, tools: [tool], policy: { decide } });

    expect(run.result.stopReason).toBe('fatal_error');
    expect(executions).toEqual([]);
    expectNoneOf(['Sup3rS3cret'], run);
    expect(run.result.detail).toBe('run faulted: Error: policy service https://ops:[redacted]@policy.internal refused');
    expect(run.result.error).toEqual({
      name: 'Error',
      message: 'policy service https://ops:[redacted]@policy.internal refused',
    });
  });

  it('redacts a broken trace sink error in its warning', async () => {
    const model = scriptedModel([reply('done')]);
    const { loop } = createTestLoop({
      model,
      trace: {
        onEvent: () => {
          throw new Error('cannot write: password=hunter2');
        },
      },
    });

    const result = await loop.run({ goal: GOAL });

    expect(result.warnings).toContain(
      'trace.onEvent threw and was disabled for this run: cannot write: password=[redacted]',
    );
  });

  it('redacts secrets in the goal summary but sends the goal to the model as given', async () => {
    const model = scriptedModel([reply('done')]);
    const goal = 'Check the login with password: hunter2';

    const run = await runWithSink({ model }, goal);

    expectNoneOf(['hunter2'], run);
    expect(transcriptText(requestAt(model, 0))).toContain('hunter2');
  });
});

describe('non-Error throws are described, never "undefined"', () => {
  it('a model adapter rejecting with undefined', async () => {
    const model: Model = { id: 'in-house', generate: () => Promise.reject(undefined) };
    const { loop } = createTestLoop({ model });

    const result = await loop.run({ goal: GOAL });

    expect(result).toMatchObject({ stopReason: 'fatal_error', detail: 'model call failed: undefined was thrown' });
    expect(result.error).toEqual({ name: 'Error', message: 'undefined was thrown' });
    expect(result.trace.find((event) => event.type === 'model-error')).toMatchObject({
      errorKind: 'unknown',
      message: 'undefined was thrown',
    });
  });

  it('a policy hook throwing a plain object', async () => {
    const { tool } = recordingTool({});
    const model = scriptedModel([toolCall('lookup', { id: 'R-1' })]);
    const decide = () => {
      throw { status: 'unavailable', retryable: false } as unknown as Error;
    };
    const { loop } = createTestLoop({ model, tools: [tool], policy: { decide } });

    const result = await loop.run({ goal: GOAL });

    expect(result.detail).toBe('run faulted: an object was thrown: {"status":"unavailable","retryable":false}');
    expect(result.error?.message).toBe('an object was thrown: {"status":"unavailable","retryable":false}');
  });

  it('a task prompt function throwing a string, and a trace sink throwing null', async () => {
    const model = scriptedModel([reply('never')]);
    const { loop } = createTestLoop({
      model,
      tasks: [
        {
          id: 'first',
          prompt: () => {
            throw 'no template for this tenant' as unknown as Error;
          },
        },
      ],
      trace: {
        onEvent: () => {
          throw null as unknown as Error;
        },
      },
    });

    const result = await loop.run({ goal: GOAL });

    expect(result).toMatchObject({ stopReason: 'fatal_error', detail: 'run faulted: no template for this tenant' });
    expect(result.warnings).toContain('trace.onEvent threw and was disabled for this run: null was thrown');
  });

  it('a tool throwing undefined is answered to the model in words', async () => {
    const { tool } = recordingTool({
      respond: () => {
        throw undefined as unknown as Error;
      },
    });
    const model = scriptedModel([toolCall('lookup', { id: 'R-1' }), reply('done')]);
    const { loop } = createTestLoop({ model, tools: [tool] });

    await loop.run({ goal: GOAL });

    expect(requestAt(model, 1).at(-1)).toMatchObject({
      role: 'tool',
      content: 'Tool lookup failed: undefined was thrown',
    });
  });
});

describe('the run id', () => {
  it('a run id that looks like a secret is redacted in every trace event, transitions included', async () => {
    const runId = 'sk-live-4f9a8b7c6d5e4f3a2b1c0d9e';
    const { loop } = createTestLoop({ model: scriptedModel([reply('done')]) });

    const result = await loop.run({ goal: 'Say done.', runId });

    expect(result.runId).toBe(runId);
    expect(result.trace.some((event) => event.type === 'transition')).toBe(true);
    expect(JSON.stringify(result.trace)).not.toContain('4f9a8b7c6d5e4f3a2b1c0d9e');
  });
});
