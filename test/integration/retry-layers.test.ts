/**
 * Retry layers (DESIGN §4): each failure class has its own edge and its own counter, and the
 * layers never multiply. All waits run on the virtual clock.
 */
import { afterEach, describe, expect, it, vi } from 'vitest';
import { z } from 'zod';
import { evaluators, type Tool, type TraceEvent } from 'loopstate';
import { modelError, reply, scriptedModel, toolCall, virtualClock, type VirtualClock } from 'loopstate/testing';
import {
  contentsWithRole,
  createTestLoop,
  hangPastTimeout,
  recordingTool,
  requestAt,
  transcriptText,
  useFakeHostTimers,
} from './helpers.js';

const GOAL = 'What is the status of order O-101?';

function retryDelays(trace: readonly TraceEvent[]): number[] {
  return trace.flatMap((event) => (event.type === 'model-error' ? [event.retryDelayMs] : []));
}

describe('transport layer: network, timeout, 429, 5xx', () => {
  it('honours a 429 Retry-After: the virtual clock advances at least that much before the retry', async () => {
    const model = scriptedModel([modelError({ status: 429, retryAfterMs: 2_000 }), reply('Shipped.')]);
    const { loop, clock } = createTestLoop({ model });

    const result = await loop.run({ goal: GOAL });

    expect(result).toMatchObject({ stopReason: 'completed', status: 'succeeded', output: 'Shipped.', steps: 1 });
    expect(clock.now()).toBeGreaterThanOrEqual(2_000);
    expect(retryDelays(result.trace)).toEqual([2_000]);
    // A transport retry re-sends the same request: nothing new was added.
    expect(requestAt(model, 1)).toEqual(requestAt(model, 0));
    expect(result.usage.modelCalls).toBe(2);
    model.assertComplete();
  });

  it('backs off with full jitter on connection and timeout errors, then succeeds', async () => {
    const model = scriptedModel([
      modelError({ kind: 'connection' }),
      modelError({ kind: 'timeout' }),
      modelError({ status: 503 }),
      reply('Shipped.'),
    ]);
    const { loop, clock } = createTestLoop({
      model,
      limits: { maxTransportAttempts: 4 },
      retry: { baseMs: 100, maxMs: 10_000 },
    });

    const result = await loop.run({ goal: GOAL });

    expect(result).toMatchObject({ stopReason: 'completed', status: 'succeeded', steps: 1 });
    // random() = 0.5 of the exponential ceiling 100, 200, 400.
    expect(retryDelays(result.trace)).toEqual([50, 100, 200]);
    expect(clock.now()).toBe(350);
    expect(result.usage.modelCalls).toBe(4);
    model.assertComplete();
  });

  it('stops with retries_exhausted once one call has failed maxTransportAttempts times in a row', async () => {
    const model = scriptedModel([
      modelError({ status: 503 }),
      modelError({ status: 502 }),
      modelError({ status: 500, message: 'still down' }),
    ]);
    const { loop } = createTestLoop({ model, limits: { maxTransportAttempts: 3 } });

    const result = await loop.run({ goal: GOAL });

    expect(result).toMatchObject({ stopReason: 'retries_exhausted', status: 'failed', steps: 0, output: null });
    expect(result.detail).toBe(
      'task main: 3rd consecutive transport failure of model call 1 (HTTP 500); raise limits.maxTransportAttempts (3). Last error: still down',
    );
    expect(result.usage.modelCalls).toBe(3);
    model.assertComplete();
  });
});

describe('argument layer: invalid tool arguments', () => {
  const orderTool = () =>
    recordingTool({
      name: 'get_order_status',
      input: z.object({ order_id: z.string().regex(/^O-\d+$/, 'expected an order id like O-100') }),
      respond: ({ order_id }) => ({ order_id, status: 'shipped' }),
    });

  it('returns the zod issue to the model as a field error naming the field; one repair then success', async () => {
    const { tool, executions } = orderTool();
    const model = scriptedModel([
      toolCall('get_order_status', { order_id: 101 }),
      toolCall('get_order_status', { order_id: 'O-101' }),
      reply('Order O-101 has shipped.'),
    ]);
    const { loop } = createTestLoop({ model, tools: [tool] });

    const result = await loop.run({ goal: GOAL });

    expect(result).toMatchObject({
      stopReason: 'completed',
      status: 'succeeded',
      output: 'Order O-101 has shipped.',
      steps: 3,
    });
    const fieldError = requestAt(model, 1).at(-1);
    expect(fieldError).toMatchObject({ role: 'tool', toolCallId: 'call_0_0' });
    expect(fieldError?.content).toContain('Tool get_order_status was called with invalid arguments:');
    expect(fieldError?.content).toMatch(/- order_id: .*expected string/);
    expect(executions).toEqual([{ order_id: 'O-101' }]);
    expect(result.usage.toolCalls).toBe(1);
    model.assertComplete();
  });

  it('names the failed refinement too (a wrong format, not only a wrong type)', async () => {
    const { tool } = orderTool();
    const model = scriptedModel([
      toolCall('get_order_status', { order_id: '101' }),
      toolCall('get_order_status', { order_id: 'O-101' }),
      reply('Shipped.'),
    ]);
    const { loop } = createTestLoop({ model, tools: [tool] });

    await loop.run({ goal: GOAL });

    expect(requestAt(model, 1).at(-1)?.content).toContain('- order_id: expected an order id like O-100');
  });

  it('stops with retries_exhausted after a second consecutive invalid round, without executing anything', async () => {
    const { tool, executions } = orderTool();
    const model = scriptedModel([
      toolCall('get_order_status', { order_id: 101 }),
      toolCall('get_order_status', { id: 'O-101' }),
      reply('never requested'),
    ]);
    const { loop } = createTestLoop({ model, tools: [tool] });

    const result = await loop.run({ goal: GOAL });

    expect(result).toMatchObject({ stopReason: 'retries_exhausted', status: 'failed', steps: 2 });
    expect(result.detail).toBe(
      'task main: tool arguments still invalid after 1 repair(s); raise limits.maxArgumentRepairs',
    );
    expect(executions).toEqual([]);
    expect(model.remaining).toBe(1);
  });

  it('gives a fresh repair after a valid round: repairs count consecutive invalid rounds only', async () => {
    const { tool, executions } = orderTool();
    const model = scriptedModel([
      toolCall('get_order_status', { order_id: 1 }),
      toolCall('get_order_status', { order_id: 'O-1' }),
      toolCall('get_order_status', { order_id: 2 }),
      toolCall('get_order_status', { order_id: 'O-2' }),
      reply('Both shipped.'),
    ]);
    const { loop } = createTestLoop({ model, tools: [tool] });

    const result = await loop.run({ goal: 'Status of O-1 and O-2?' });

    expect(result).toMatchObject({ stopReason: 'completed', steps: 5 });
    expect(executions).toEqual([{ order_id: 'O-1' }, { order_id: 'O-2' }]);
    model.assertComplete();
  });
});

describe('reflection layer: the output fails the evaluator', () => {
  const answer = z.object({ order_id: z.string(), status: z.enum(['paid', 'shipped']) });

  it('feeds the failure reason into the next request, then succeeds', async () => {
    const model = scriptedModel([
      reply('{"order_id":"O-101","status":"lost"}'),
      reply('{"order_id":"O-101","status":"shipped"}'),
    ]);
    const { loop } = createTestLoop({ model, evaluate: [evaluators.schema(answer)] });

    const result = await loop.run({ goal: GOAL });

    expect(result).toMatchObject({
      stopReason: 'completed',
      status: 'succeeded',
      output: { order_id: 'O-101', status: 'shipped' },
      steps: 2,
    });
    const reflection = contentsWithRole(requestAt(model, 1), 'user').at(-1);
    expect(reflection).toMatch(
      /^Your previous answer did not pass evaluation: output does not match the schema: status: /,
    );
    expect(reflection).toContain('Fix exactly that and answer again.');
    // The failed answer stays in the conversation, so the model sees what it is fixing.
    expect(requestAt(model, 1)).toContainEqual({ role: 'assistant', content: '{"order_id":"O-101","status":"lost"}' });
    model.assertComplete();
  });

  it('stops with retries_exhausted when reflections run out, each reason reaching the model', async () => {
    const model = scriptedModel([reply('not json'), reply('{"order_id":"O-101"}'), reply('{"status":"shipped"}')]);
    const { loop } = createTestLoop({ model, evaluate: [evaluators.schema(answer)], limits: { maxRetries: 2 } });

    const result = await loop.run({ goal: GOAL });

    expect(result).toMatchObject({
      stopReason: 'retries_exhausted',
      status: 'failed',
      steps: 3,
      output: null,
      rawOutput: '{"status":"shipped"}',
    });
    expect(result.detail).toMatch(
      /^task main: evaluation still failing after 2 reflection retries: output does not match the schema: order_id/,
    );
    expect(contentsWithRole(requestAt(model, 1), 'user').at(-1)).toContain('output is not valid JSON');
    expect(contentsWithRole(requestAt(model, 2), 'user').at(-1)).toContain('status:');
    model.assertComplete();
  });
});

describe('permission layer: never retried', () => {
  it('calls the model exactly once when a call is denied', async () => {
    const { tool, executions } = recordingTool({ name: 'cancel_order', access: 'write' });
    const model = scriptedModel([
      toolCall('cancel_order', { id: 'O-101' }),
      toolCall('cancel_order', { id: 'O-101' }),
      reply('never requested'),
    ]);
    const { loop } = createTestLoop({ model, tools: [tool], policy: { allow: ['read'] }, limits: { maxRetries: 5 } });

    const result = await loop.run({ goal: 'Cancel O-101' });

    expect(result).toMatchObject({ stopReason: 'permission_denied', status: 'failed' });
    expect(model.calls).toHaveLength(1);
    expect(result.usage.modelCalls).toBe(1);
    expect(executions).toEqual([]);
  });
});

/** A non-idempotent write that hangs past its 500 ms timeout; `executions` records each run. */
function timedOutCharge(
  clock: VirtualClock,
  checkOutcome?: Tool['checkOutcome'],
): { tool: Tool; executions: unknown[] } {
  const { tool, executions } = recordingTool({
    name: 'charge_card',
    access: 'write',
    timeoutMs: 500,
    respond: () => hangPastTimeout(clock, 500),
    ...(checkOutcome === undefined ? {} : { checkOutcome }),
  });
  return { tool, executions };
}

describe('side-effect layer: unknown outcome is never re-executed', () => {
  afterEach(() => {
    vi.useRealTimers();
  });

  it('executes a timed-out write once and stops for a person when its outcome cannot be looked up', async () => {
    useFakeHostTimers();
    const clock = virtualClock();
    const { tool, executions } = timedOutCharge(clock);
    const model = scriptedModel([toolCall('charge_card', { id: 'O-101' }), toolCall('charge_card', { id: 'O-101' })]);
    const { loop } = createTestLoop({ model, tools: [tool], limits: { maxRetries: 5 } }, clock);

    const result = await loop.run({ goal: 'Charge O-101' });

    expect(result).toMatchObject({ stopReason: 'needs_human', status: 'needs_human' });
    expect(executions).toHaveLength(1);
    expect(model.calls).toHaveLength(1);
  });

  it('continues with the looked-up result when checkOutcome finds the call took effect', async () => {
    useFakeHostTimers();
    const clock = virtualClock();
    const lookups: string[] = [];
    const { tool, executions } = timedOutCharge(clock, (_args, { idempotencyKey }) => {
      lookups.push(idempotencyKey);
      return { status: 'done', result: { charged: true, receipt: 'rcpt-1' } };
    });
    const model = scriptedModel([toolCall('charge_card', { id: 'O-101' }), reply('Charged, receipt rcpt-1.')]);
    const { loop } = createTestLoop({ model, tools: [tool] }, clock);

    const result = await loop.run({ goal: 'Charge O-101', runId: 'run-42' });

    expect(result).toMatchObject({ stopReason: 'completed', status: 'succeeded', output: 'Charged, receipt rcpt-1.' });
    expect(executions).toHaveLength(1);
    // Idempotency key: runId:stepId:callId.
    expect(lookups).toEqual(['run-42:1:call_0_0']);
    expect(requestAt(model, 1).at(-1)).toEqual({
      role: 'tool',
      toolCallId: 'call_0_0',
      content: '{"charged":true,"receipt":"rcpt-1"}',
    });
    model.assertComplete();
  });

  it('tells the model a timed-out call did not take effect when checkOutcome says not_done, without re-running it', async () => {
    useFakeHostTimers();
    const clock = virtualClock();
    const { tool, executions } = timedOutCharge(clock, () => ({ status: 'not_done' }));
    const model = scriptedModel([toolCall('charge_card', { id: 'O-101' }), reply('The charge did not go through.')]);
    const { loop } = createTestLoop({ model, tools: [tool] }, clock);

    const result = await loop.run({ goal: 'Charge O-101' });

    expect(result).toMatchObject({ stopReason: 'completed', output: 'The charge did not go through.' });
    expect(executions).toHaveLength(1);
    expect(requestAt(model, 1).at(-1)?.content).toBe(
      'Tool charge_card timed out after 500 ms and did not take effect.',
    );
  });
});

describe('layers do not multiply', () => {
  it('completes with two transport failures and two reflections under maxRetries 2; modelCalls = steps + transport retries', async () => {
    const model = scriptedModel([
      modelError({ status: 503 }),
      reply('draft one'),
      modelError({ kind: 'connection' }),
      reply('draft two'),
      reply('FINAL: all good'),
    ]);
    const { loop } = createTestLoop({
      model,
      evaluate: [
        evaluators.rule(
          (text: string) => text.startsWith('FINAL:') || `must start with FINAL:, got "${text}"`,
          'must start with FINAL:',
        ),
      ],
      limits: { maxRetries: 2 },
    });

    const result = await loop.run({ goal: 'Write the summary' });

    expect(result).toMatchObject({ stopReason: 'completed', status: 'succeeded', output: 'FINAL: all good', steps: 3 });
    expect(retryDelays(result.trace)).toHaveLength(2);
    expect(result.usage.modelCalls).toBe(result.steps + 2);
    // The reflection added before the failed call is sent once, not again on the transport retry.
    const lastRequest = transcriptText(requestAt(model, 4));
    expect(lastRequest.match(/must start with FINAL:, got "draft one"/g)).toHaveLength(1);
    expect(lastRequest.match(/must start with FINAL:, got "draft two"/g)).toHaveLength(1);
    expect(requestAt(model, 3)).toEqual(requestAt(model, 2));
    model.assertComplete();
  });
});
