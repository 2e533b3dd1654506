import { describe, expect, it } from 'vitest';
import { createOrderLoop, offlineOrderModel } from '../../examples/order-status.js';

describe('order status example', () => {
  it('completes offline with one tool call and reports usage', async () => {
    const result = await createOrderLoop(offlineOrderModel()).run({ goal: 'What is the status of order O-101?' });
    expect(result.stopReason).toBe('completed');
    expect(result.status).toBe('succeeded');
    expect(result.output).toEqual({ order_id: 'O-101', status: 'shipped', answer: 'Order O-101 has shipped.' });
    expect(result.usage).toMatchObject({ inputTokens: 420, outputTokens: 53, modelCalls: 2, toolCalls: 1 });
    expect(result.usage.costUsd).toBeCloseTo((420 * 0.4 + 53 * 1.6) / 1e6, 12);
    expect(result.steps).toBe(2);
    expect(result.warnings).toEqual([]);
    const toolEnd = result.trace.find((event) => event.type === 'tool-end');
    expect(toolEnd).toMatchObject({ name: 'get_order_status', status: 'ok' });
  });
});
