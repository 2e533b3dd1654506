/**
 * One full run per stop reason (DESIGN §3), continued from stop-reasons.test.ts: the stops a policy, a tool's
 * health, a person, a cancellation or a failure makes, and edge cases — the reason, the status it maps to, the
 * detail, the best partial output and what the model saw.
 */
import { afterEach, describe, expect, it, vi } from 'vitest';
import { z } from 'zod';
import { evaluators, ToolHealth, type Model } from 'loopstate';
import { modelError, reply, scriptedModel, toolCall, virtualClock } from 'loopstate/testing';
import { createTestLoop, hangPastTimeout, recordingTool, requestAt, useFakeHostTimers } from './helpers.js';

const answer = z.object({ id: z.string(), status: z.string() });
const GOAL = 'What is the status of record R-1?';

describe('permission_denied', () => {
  it('stops on a write tool when the policy allows only reads, and never executes it', async () => {
    const { tool, executions } = recordingTool({ name: 'update_record', access: 'write' });
    const model = scriptedModel([toolCall('update_record', { id: 'R-1' }), reply('never requested')]);
    const { loop } = createTestLoop({ model, tools: [tool], policy: { allow: ['read'] } });

    const result = await loop.run({ goal: 'Mark R-1 as done' });

    expect(result).toMatchObject({
      stopReason: 'permission_denied',
      status: 'failed',
      detail: expect.stringMatching(/^the policy denied tool "\w+"/),
      steps: 1,
    });
    expect(executions).toEqual([]);
    expect(model.calls).toHaveLength(1);
    expect(result.usage.toolCalls).toBe(0);
  });

  it('stops when the decide hook denies one call by its arguments, after allowing another', async () => {
    const { tool, executions } = recordingTool({
      name: 'refund',
      access: 'write',
      input: z.object({ amount: z.number() }),
    });
    const model = scriptedModel([
      toolCall('refund', { amount: 20 }),
      toolCall('refund', { amount: 500 }),
      reply('never requested'),
    ]);
    const { loop } = createTestLoop({
      model,
      tools: [tool],
      policy: { decide: ({ args }) => ((args as { amount: number }).amount > 100 ? 'deny' : undefined) },
    });

    const result = await loop.run({ goal: 'Refund the customer' });

    expect(result).toMatchObject({ stopReason: 'permission_denied', status: 'failed', steps: 2 });
    expect(executions).toEqual([{ amount: 20 }]);
    expect(model.remaining).toBe(1);
  });
});

describe('tool_unavailable', () => {
  const failingTool = () =>
    recordingTool({
      name: 'flaky',
      respond: ({ id }) => {
        throw new Error(`backend down while reading ${String(id)}`);
      },
    });

  it('stops when the circuit breaker opens on a tool the task requires', async () => {
    const { tool, executions } = failingTool();
    const model = scriptedModel([
      toolCall('flaky', { id: 'A' }),
      toolCall('flaky', { id: 'B' }),
      toolCall('flaky', { id: 'C' }),
      reply('never requested'),
    ]);
    const clock = virtualClock();
    const toolHealth = new ToolHealth({ now: () => clock.now() });
    const { loop } = createTestLoop(
      { model, tools: [tool], tasks: [{ id: 'fetch', prompt: 'Fetch the records', requires: ['flaky'] }], toolHealth },
      clock,
    );

    const result = await loop.run({ goal: GOAL });

    expect(result).toMatchObject({ stopReason: 'tool_unavailable', status: 'failed', steps: 3 });
    expect(result.detail).toBe('a tool the task needs is unavailable (circuit breaker open)');
    expect(executions).toHaveLength(3);
    expect(toolHealth.snapshot().flaky).toMatchObject({ consecutiveFailures: 3, circuitOpen: true });
    // Each failure reached the model as an error observation.
    expect(requestAt(model, 1).at(-1)).toMatchObject({
      role: 'tool',
      content: 'Tool flaky failed: backend down while reading A',
    });
    expect(model.remaining).toBe(1);
  });

  it('withholds a tool whose circuit opened and stops when the model calls it anyway', async () => {
    const { tool, executions } = failingTool();
    const model = scriptedModel([
      toolCall('flaky', { id: 'A' }),
      toolCall('flaky', { id: 'B' }),
      toolCall('flaky', { id: 'C' }),
      toolCall('flaky', { id: 'D' }),
    ]);
    const { loop } = createTestLoop({ model, tools: [tool] });

    const result = await loop.run({ goal: GOAL });

    expect(result).toMatchObject({ stopReason: 'tool_unavailable', status: 'failed', steps: 4 });
    expect(model.calls[0]?.tools.map((spec) => spec.name)).toEqual(['flaky']);
    expect(model.calls[3]?.tools).toEqual([]);
    expect(executions.map((args) => args.id)).toEqual(['A', 'B', 'C']);
    model.assertComplete();
  });
});

describe('cancelled', () => {
  it('stops when the caller aborts mid-run inside a tool', async () => {
    const controller = new AbortController();
    const model = scriptedModel([toolCall('lookup', { id: 'R-1' }), reply('never requested')]);
    const { tool } = recordingTool({
      respond: () => {
        controller.abort('user pressed stop');
        return { status: 'shipped' };
      },
    });
    const { loop } = createTestLoop({ model, tools: [tool] });

    const result = await loop.run({ goal: GOAL, signal: controller.signal });

    expect(result).toMatchObject({
      stopReason: 'cancelled',
      status: 'failed',
      detail: 'cancelled: user pressed stop',
      steps: 1,
    });
    expect(model.calls).toHaveLength(1);
    expect(model.remaining).toBe(1);
  });

  it('stops before any model call when the signal is already aborted', async () => {
    const model = scriptedModel([reply('never requested')]);
    const { loop } = createTestLoop({ model });

    const result = await loop.run({ goal: GOAL, signal: AbortSignal.abort('shutting down') });

    expect(result).toMatchObject({
      stopReason: 'cancelled',
      status: 'failed',
      detail: 'cancelled: shutting down',
      steps: 0,
      output: null,
    });
    expect(model.calls).toHaveLength(0);
    expect(result.usage.modelCalls).toBe(0);
  });
});

describe('needs_human', () => {
  afterEach(() => {
    vi.useRealTimers();
  });

  it('stops on a destructive tool by default, listing it in pendingApprovals without running it', async () => {
    const { tool, executions } = recordingTool({ name: 'delete_record', access: 'destructive' });
    const model = scriptedModel([toolCall('delete_record', { id: 'R-1' }), reply('never requested')]);
    const { loop } = createTestLoop({ model, tools: [tool] });

    const result = await loop.run({ goal: 'Delete R-1' });

    expect(result).toMatchObject({
      stopReason: 'needs_human',
      status: 'needs_human',
      detail: expect.stringMatching(/^tool "\w+" needs a person's approval/),
      steps: 1,
    });
    expect(result.pendingApprovals).toEqual([{ callId: 'call_0_0', tool: 'delete_record', args: { id: 'R-1' } }]);
    expect(executions).toEqual([]);
    expect(model.calls).toHaveLength(1);
  });

  it('stops when a non-idempotent write times out with no checkOutcome, and does not run it again', async () => {
    useFakeHostTimers();
    const clock = virtualClock();
    let executions = 0;
    const { tool } = recordingTool({
      name: 'send_invoice',
      access: 'write',
      timeoutMs: 1_000,
      respond: () => {
        executions++;
        return hangPastTimeout(clock, 1_000);
      },
    });
    const model = scriptedModel([toolCall('send_invoice', { id: 'R-1' }), reply('never requested')]);
    const { loop } = createTestLoop({ model, tools: [tool] }, clock);

    const result = await loop.run({ goal: 'Send the invoice' });

    expect(result).toMatchObject({ stopReason: 'needs_human', status: 'needs_human', steps: 1 });
    expect(result.detail).toBe(
      'a side-effecting tool call timed out and its outcome cannot be known; a person must check it',
    );
    expect(result.pendingApprovals).toEqual([]);
    expect(executions).toBe(1);
    expect(model.calls).toHaveLength(1);
    expect(result.trace).toContainEqual(
      expect.objectContaining({ type: 'tool-end', name: 'send_invoice', status: 'unknown_outcome' }),
    );
  });
});

describe('retries_exhausted', () => {
  it('stops when the output keeps failing the evaluator after maxRetries reflections', async () => {
    const model = scriptedModel([reply('{"id":"R-1"}'), reply('{"status":"shipped"}')]);
    const { loop } = createTestLoop({ model, evaluate: [evaluators.schema(answer)], limits: { maxRetries: 1 } });

    const result = await loop.run({ goal: GOAL });

    expect(result).toMatchObject({ stopReason: 'retries_exhausted', status: 'failed', steps: 2 });
    expect(result.detail).toMatch(
      /^task main: evaluation still failing after 1 reflection retries: output does not match the schema: id: /,
    );
    expect(result).toMatchObject({ output: null, rawOutput: '{"status":"shipped"}' });
    model.assertComplete();
  });
});

describe('fatal_error', () => {
  it('stops on a non-retryable model error (HTTP 401) after one call', async () => {
    const model = scriptedModel([modelError({ status: 401 }), reply('never requested')]);
    const { loop } = createTestLoop({ model });

    const result = await loop.run({ goal: GOAL });

    expect(result).toMatchObject({ stopReason: 'fatal_error', status: 'failed', steps: 0 });
    expect(result.detail).toBe('model call failed: scripted model error: HTTP 401 (auth)');
    expect(result.error).toEqual({
      name: 'ModelCallError',
      message: 'scripted model error: HTTP 401 (auth)',
      code: 'model_auth',
    });
    expect(model.calls).toHaveLength(1);
    expect(result.usage.modelCalls).toBe(1);
  });

  it('stops when a model throws a plain Error, and warns that an unpriced model cannot be cost-limited', async () => {
    const model: Model = {
      id: 'in-house',
      generate: () => Promise.reject(new Error('adapter crashed')),
    };
    const { loop } = createTestLoop({ model });

    const result = await loop.run({ goal: GOAL });

    expect(result).toMatchObject({
      stopReason: 'fatal_error',
      status: 'failed',
      detail: 'model call failed: adapter crashed',
    });
    expect(result.error).toEqual({ name: 'Error', message: 'adapter crashed' });
    expect(result.warnings).toEqual([expect.stringContaining('no price for model "in-house"')]);
  });

  it('stops when the scripted model runs out of steps, with the ScriptExhaustedError on the result', async () => {
    const { tool } = recordingTool({});
    const model = scriptedModel([toolCall('lookup', { id: 'R-1' })]);
    const { loop } = createTestLoop({ model, tools: [tool] });

    const result = await loop.run({ goal: GOAL });

    expect(result).toMatchObject({ stopReason: 'fatal_error', status: 'failed', steps: 1 });
    expect(result.error).toMatchObject({ name: 'ScriptExhaustedError', code: 'script_exhausted' });
    expect(result.error?.message).toMatch(
      /^scripted model called 2 times but the script has 1 steps; the last request ended with: tool result for call_0_0/,
    );
    expect(result.detail).toBe(`model call failed: ${result.error?.message}`);
  });
});

describe('stop reasons in edge cases', () => {
  it('a cancel without a reason gives a readable detail, not "cancelled: {}"', async () => {
    const controller = new AbortController();
    const { tool } = recordingTool({
      respond: () => {
        controller.abort();
        return 'ok';
      },
    });
    const { loop } = createTestLoop({ model: scriptedModel([toolCall('lookup', { id: 'R-1' })]), tools: [tool] });

    const result = await loop.run({ goal: GOAL, signal: controller.signal });

    expect(result.stopReason).toBe('cancelled');
    expect(result.detail).toMatch(/^cancelled: .*abort/i);
  });

  it('a tool timeout runs on the injected clock, so a write that takes past its timeout on the virtual clock is an unknown outcome', async () => {
    const model = scriptedModel([toolCall('send_invoice', { id: 'R-1' }), reply('Sent.')]);
    const { loop, clock } = createTestLoop({
      model,
      tools: [
        recordingTool({
          name: 'send_invoice',
          access: 'write',
          timeoutMs: 1_000,
          respond: () => {
            clock.advance(5_000);
            return 'sent';
          },
        }).tool,
      ],
    });

    const result = await loop.run({ goal: 'Send the invoice' });

    expect(result.trace).toContainEqual(
      expect.objectContaining({ type: 'tool-end', name: 'send_invoice', status: 'unknown_outcome' }),
    );
    expect(result.stopReason).toBe('needs_human');
  });

  it('a task that requires a tool whose circuit is already open stops with tool_unavailable before calling the model', async () => {
    const { tool } = recordingTool({
      name: 'flaky',
      respond: () => {
        throw new Error('down');
      },
    });
    const model = scriptedModel([
      toolCall('flaky', { id: 'A' }),
      toolCall('flaky', { id: 'B' }),
      toolCall('flaky', { id: 'C' }),
      reply('An answer made up without the tool.'),
    ]);
    const clock = virtualClock();
    const toolHealth = new ToolHealth({ now: () => clock.now() });
    const { loop } = createTestLoop(
      { model, tools: [tool], tasks: [{ id: 'fetch', prompt: 'Fetch it', requires: ['flaky'] }], toolHealth },
      clock,
    );
    const first = await loop.run({ goal: GOAL });
    expect(first.stopReason).toBe('tool_unavailable');

    // Same loop, tool health shared on purpose: the circuit is still open.
    const second = await loop.run({ goal: GOAL });

    expect(second).toMatchObject({ stopReason: 'tool_unavailable', status: 'failed' });
    expect(model.calls).toHaveLength(3);
  });

  it('a side-effecting call in flight when the deadline hits is recorded, not silently dropped', async () => {
    const model = scriptedModel([toolCall('send_invoice', { id: 'R-1' })]);
    const { loop, clock } = createTestLoop({
      model,
      tools: [
        recordingTool({
          name: 'send_invoice',
          access: 'write',
          respond: () => {
            clock.advance(10_000);
            return 'sent';
          },
        }).tool,
      ],
      limits: { deadlineMs: 5_000 },
    });

    const result = await loop.run({ goal: 'Send the invoice' });

    expect(result.stopReason).toBe('deadline_exceeded');
    // The call ran: the trace must show it (DESIGN §11) and usage must count it.
    expect(result.trace).toContainEqual(
      expect.objectContaining({ type: 'tool-end', name: 'send_invoice', status: 'unknown_outcome' }),
    );
    expect(result.usage.toolCalls).toBe(1);
  });
});
