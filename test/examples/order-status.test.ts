import { describe, expect, it } from 'vitest';
import { createOrderLoop, goal, offlineOrderModel, orderLoopConfig } from '../../examples/order-status.js';
import { createLoop } from 'loopstate';
import { reply, scriptedModel, toolCall } from 'loopstate/testing';
import { rebuildRun } from '../../src/engine/trace/rebuild-run.js';

describe('order-status example (seed 000)', () => {
  it('repairs a malformed order id once, looks the order up, and answers within its step bound', async () => {
    const result = await createOrderLoop(offlineOrderModel()).run({ goal });
    expect(result).toMatchObject({ status: 'succeeded', stopReason: 'completed', steps: 3, warnings: [] });
    expect(result.output).toEqual({ order_id: 'O-101', status: 'shipped', answer: 'Order O-101 has shipped.' });
    expect(result.usage).toMatchObject({ inputTokens: 700, outputTokens: 75, modelCalls: 3, toolCalls: 1 });
    expect(result.usage.costUsd).toBeCloseTo((700 * 0.4 + 75 * 1.6) / 1e6, 12);
    expect(rebuildRun(result.trace).retries).toEqual({ transport: 0, reflection: 0, argument_repair: 1 });
    // The repair names the field the model got wrong, as the schema's message puts it.
    expect(result.trace.filter((event) => event.type === 'retry')).toEqual([
      expect.objectContaining({
        layer: 'argument_repair',
        step: 1,
        argumentErrors: [
          {
            callId: expect.any(String) as unknown,
            name: 'get_order_status',
            error: 'order_id: expected an order id like O-100',
          },
        ],
      }),
    ]);
    expect(result.trace.filter((event) => event.type === 'tool-end')).toEqual([
      expect.objectContaining({ name: 'get_order_status', status: 'ok', step: 2 }),
    ]);
    const health = result.trace.findLast((event) => event.type === 'tool-health');
    expect(health).toMatchObject({
      tools: [{ name: 'get_order_status', calls: 1, successRate: 1, circuit: 'closed' }],
    });
  });

  it('answers not_found for an unknown order without guessing', async () => {
    const result = await createOrderLoop(offlineOrderModel('O-999')).run({
      goal: 'What is the status of order O-999?',
    });
    expect(result).toMatchObject({ status: 'succeeded', stopReason: 'completed', steps: 3 });
    expect(result.output).toMatchObject({ order_id: 'O-999', status: 'not_found' });
  });

  it('refuses a guessed status: the reason goes back to the model, which looks the order up', async () => {
    const model = scriptedModel([
      reply(JSON.stringify({ order_id: 'O-100', status: 'shipped', answer: 'Order O-100 has shipped.' })),
      toolCall('get_order_status', { order_id: 'O-100' }),
      reply(JSON.stringify({ order_id: 'O-100', status: 'paid', answer: 'Order O-100 is paid.' })),
    ]);
    const result = await createLoop(orderLoopConfig(model)).run({ goal: 'What is the status of order O-100?' });
    expect(result).toMatchObject({ stopReason: 'completed', steps: 3, output: { status: 'paid' } });
    expect(result.trace.find((event) => event.type === 'evaluation-end' && !event.passed)).toMatchObject({
      reason: expect.stringContaining('never guess'),
    });
    expect(rebuildRun(result.trace).retries.reflection).toBe(1);
  });

  it('stops at its step bound when the model keeps calling', async () => {
    const model = scriptedModel(
      ['O-1', 'O-2', 'O-3', 'O-4'].map((id) => toolCall('get_order_status', { order_id: id })),
    );
    const result = await createLoop(orderLoopConfig(model)).run({ goal: 'Find my order' });
    expect(result).toMatchObject({ stopReason: 'max_steps', steps: 4 });
  });
});
