/**
 * Transport attempts are per model call: isolated failures in a long run never add up to a stop, a call
 * that keeps failing stops its task with a detail naming it, and `limits.maxTransportRetries` is a separate,
 * optional cap on the run's total. Over real HTTP (the `openai` client against the local server) and with
 * the scripted model; every wait runs on the virtual clock.
 */
import { describe, expect, it } from 'vitest';
import { CONTEXT_SUMMARY_PROMPT } from '../../src/engine/prompts.js';
import { createLoop, type ModelRequest, type RunResult, type TraceEvent } from 'loopstate';
import { openaiModel } from 'loopstate/openai';
import { modelError, reply, scriptedModel, toolCall, virtualClock, type ScriptStep } from 'loopstate/testing';
import { apiError, replyStep } from '../support/openai-fixtures.js';
import { useOpenAIServer, type OpenAITestServer, type ServerStep } from '../support/openai-server.js';
import { createTestLoop, recordingTool } from './helpers.js';

let server: OpenAITestServer;
useOpenAIServer((started) => (server = started));

const GOAL = 'Check the records one by one, then say done.';
const lookupReply = (step: number): ServerStep =>
  replyStep('chat', false, { toolCalls: [{ id: `call-${step}`, name: 'lookup', args: { id: `R-${step}` } }] });
const UNAVAILABLE = apiError(503, 'Service unavailable');

const retryDelays = (result: RunResult) =>
  result.trace.flatMap((event) => (event.type === 'model-error' ? [event.retryDelayMs] : []));
const transportRetries = (trace: readonly TraceEvent[]) =>
  trace.flatMap((event) => (event.type === 'retry' && event.layer === 'transport' ? [event.counter] : []));

/** A loop on the real `openai` client against the local server, with the defaults for every limit not given. */
function httpLoop(limits: Record<string, number> = {}) {
  const { tool, executions } = recordingTool({ respond: ({ id }) => ({ id, status: `record ${String(id)} checked` }) });
  const loop = createLoop({
    model: openaiModel({
      model: 'gpt-4.1-mini',
      baseURL: server.baseURL,
      apiKey: 'sk-test-transport',
      timeoutMs: 5_000,
    }),
    tools: [tool],
    limits,
    clock: virtualClock(),
    random: () => 0,
  });
  return { loop, executions };
}

describe('transport attempts per call, over real HTTP', () => {
  it('a 13-step run with four isolated 503s, each recovered on its first retry, completes', async () => {
    // Steps 1, 4, 8 and 12 fail once first. Counted per task, the third 503 used to stop the run here.
    const steps: ServerStep[] = [];
    for (let step = 1; step <= 12; step++) {
      if ([1, 4, 8, 12].includes(step)) steps.push(UNAVAILABLE);
      steps.push(lookupReply(step));
    }
    steps.push(replyStep('chat', false, { text: 'done' }));
    server.enqueue(...steps);
    const { loop, executions } = httpLoop({ maxSteps: 14 });

    const result = await loop.run({ goal: GOAL });

    expect(result).toMatchObject({ stopReason: 'completed', status: 'succeeded', output: 'done', steps: 13 });
    expect(executions).toHaveLength(12);
    // One HTTP request per attempt: 13 decisions and 4 retries.
    expect(server.requests).toHaveLength(17);
    expect(result.usage.modelCalls).toBe(17);
    // Each retry was its call's first.
    expect(transportRetries(result.trace)).toEqual([1, 1, 1, 1]);
    expect(result.warnings).toEqual([]);
  });

  it('a call that fails maxTransportAttempts times in a row stops the task, naming the call, the status and the option', async () => {
    server.enqueue(lookupReply(1), UNAVAILABLE, UNAVAILABLE, UNAVAILABLE);
    const { loop } = httpLoop();

    const result = await loop.run({ goal: GOAL });

    expect(result).toMatchObject({ stopReason: 'retries_exhausted', status: 'failed', steps: 1 });
    expect(result.detail).toMatch(
      /^task main: 3rd consecutive transport failure of model call 2 \(HTTP 503\); raise limits\.maxTransportAttempts \(3\)\. Last error: .*HTTP 503 Service unavailable/,
    );
    expect(server.requests).toHaveLength(4);
  });

  it('a 429 whose Retry-After reaches past the deadline stops at once, naming the 429 and the wait, not a deadline passed', async () => {
    server.enqueue(apiError(429, 'Rate limit reached', { 'retry-after': '30' }));
    const { loop } = httpLoop({ deadlineMs: 10_000 });

    const result = await loop.run({ goal: GOAL });

    expect(result.stopReason).toBe('deadline_exceeded');
    expect(result.detail).toBe(
      'model call 1 failed (HTTP 429) and the server asked to wait 30000 ms (Retry-After): the retry would start 20000 ms after the deadline (10000 ms; 10000 ms were left), so the run stopped without waiting; raise limits.deadlineMs (or lower retry.maxRetryAfterMs)',
    );
    expect(server.requests).toHaveLength(1);
  });
});

describe('transport attempts per call, with the scripted model', () => {
  it('restarts the backoff exponent with each call: a new call begins at the base delay again', async () => {
    const { tool } = recordingTool({});
    const model = scriptedModel([
      modelError({ status: 503 }),
      modelError({ status: 503 }),
      toolCall('lookup', { id: 'A' }),
      modelError({ status: 503 }),
      reply('done'),
    ]);
    const { loop } = createTestLoop({ model, tools: [tool], retry: { baseMs: 100, maxMs: 10_000 } });

    const result = await loop.run({ goal: GOAL });

    expect(result.stopReason).toBe('completed');
    // random() = 0.5 of the ceiling: 100 and 200 for the first call's two failures, 100 again for the second call's.
    expect(retryDelays(result)).toEqual([50, 100, 50]);
    expect(transportRetries(result.trace)).toEqual([1, 2, 1]);
    model.assertComplete();
  });

  it("limits.maxTransportRetries caps the run's total: the third isolated failure with two retries spent stops the task", async () => {
    const { tool } = recordingTool({});
    const model = scriptedModel([
      modelError({ status: 503 }),
      toolCall('lookup', { id: 'A' }),
      modelError({ status: 503 }),
      toolCall('lookup', { id: 'B' }),
      modelError({ status: 503, message: 'still overloaded' }),
    ]);
    const { loop } = createTestLoop({ model, tools: [tool], limits: { maxTransportRetries: 2 } });

    const result = await loop.run({ goal: GOAL });

    expect(result).toMatchObject({ stopReason: 'retries_exhausted', steps: 2 });
    expect(result.detail).toBe(
      "task main: model call 3 failed (HTTP 503) with the run's transport retries spent (2 of maxTransportRetries 2); raise limits.maxTransportRetries. Last error: still overloaded",
    );
    model.assertComplete();
  });

  it('maxTransportRetries 0 retries nothing, whatever the attempts per call', async () => {
    const model = scriptedModel([modelError({ kind: 'timeout' })]);
    const { loop } = createTestLoop({ model, limits: { maxTransportRetries: 0, maxTransportAttempts: 5 } });

    const result = await loop.run({ goal: GOAL });

    expect(result.stopReason).toBe('retries_exhausted');
    expect(result.detail).toContain(
      "model call 1 failed (timeout) with the run's transport retries spent (0 of maxTransportRetries 0)",
    );
    expect(result.usage.modelCalls).toBe(1);
  });

  it("a context summary call's 503 is retried as a call of its own; the summary is made, nothing falls back", async () => {
    const { tool } = recordingTool({ respond: ({ id }) => ({ id, body: `${String(id)} `.repeat(500) }) });
    const isSummary = (request: ModelRequest) => request.messages[0]?.content === CONTEXT_SUMMARY_PROMPT;
    let decisions = 0;
    let summaries = 0;
    const step: ScriptStep = (request) => {
      if (isSummary(request)) return ++summaries === 1 ? modelError({ status: 503 }) : reply('Looked up R-1 to R-3.');
      decisions++;
      return decisions <= 4 ? toolCall('lookup', { id: `R-${decisions}` }) : reply('done');
    };
    const model = scriptedModel(Array.from({ length: 20 }, () => step));
    const { loop } = createTestLoop({
      model,
      tools: [tool],
      context: { maxInputTokensPerCall: 1_500, strategy: 'summarize', keepTurns: 1 },
    });

    const result = await loop.run({ goal: GOAL });

    expect(result.stopReason).toBe('completed');
    expect(summaries).toBeGreaterThanOrEqual(2);
    expect(result.warnings.filter((warning) => warning.startsWith('context:'))).toEqual([]);
    const condensed = result.trace.find((event) => event.type === 'context-trimmed' && event.strategy === 'summarize');
    expect(condensed).toMatchObject({ summarySkipped: null });
    // Every attempt is a model call: the decisions, and every summary attempt.
    expect(result.usage.modelCalls).toBe(decisions + summaries);
  });
});

describe('limits.maxRetries, which used to bound transport retries per task', () => {
  it('set alone, it still gives each call maxRetries + 1 attempts, with a warning saying so once per run', async () => {
    const model = scriptedModel([...Array.from({ length: 5 }, () => modelError({ status: 503 })), reply('done')]);
    const { loop } = createTestLoop({ model, limits: { maxRetries: 5 } });

    const result = await loop.run({ goal: GOAL });

    expect(result).toMatchObject({ stopReason: 'completed', steps: 1 });
    expect(result.usage.modelCalls).toBe(6);
    expect(result.warnings).toEqual([
      'limits.maxRetries (5) now bounds reflection retries only; transport attempts are per model call (limits.maxTransportAttempts). Until limits.maxTransportAttempts is set, each call gets maxRetries + 1 = 6 attempts; this fallback is deprecated',
    ]);
    expect(result.trace.filter((event) => event.type === 'warning')).toHaveLength(1);
  });

  it('says nothing when maxTransportAttempts is set, or when the fallback gives the default anyway', async () => {
    for (const limits of [{ maxRetries: 5, maxTransportAttempts: 3 }, { maxRetries: 2 }, {}]) {
      const { loop } = createTestLoop({ model: scriptedModel([reply('done')]), limits });
      expect((await loop.run({ goal: GOAL })).warnings).toEqual([]);
    }
  });

  it('bounds reflection alone once maxTransportAttempts is set: transport attempts do not follow it', async () => {
    const model = scriptedModel([modelError({ status: 503 }), modelError({ status: 503 }), reply('done')]);
    const { loop } = createTestLoop({ model, limits: { maxRetries: 0, maxTransportAttempts: 3 } });

    const result = await loop.run({ goal: GOAL });

    expect(result.stopReason).toBe('completed');
    expect(result.usage.modelCalls).toBe(3);
  });
});
