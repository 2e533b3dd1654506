import { describe, expect, it } from 'vitest';
import { z } from 'zod';
import { createLoop, defineTool, type ToolOrder } from 'loopstate';
import { reply, scriptedModel, toolCall, virtualClock } from 'loopstate/testing';
import { flaky, steady } from '../support/flaky-tools.js';

function run(toolOrder: ToolOrder | undefined) {
  const model = scriptedModel([toolCall('flaky', {}), toolCall('steady', {}), reply('done')]);
  const loop = createLoop({
    model,
    tools: [flaky, steady],
    clock: virtualClock(),
    ...(toolOrder === undefined ? {} : { toolOrder }),
  });
  return { model, result: loop.run({ goal: 'Use the tools.' }) };
}

describe('toolOrder', () => {
  it('offers tools by success-rate weight with success_rate, and records health and order in tool-health events', async () => {
    const { model, result } = run('success_rate');
    const { trace, stopReason } = await result;
    expect(stopReason).toBe('completed');
    expect(model.calls.map((call) => call.tools?.map((tool) => tool.name))).toEqual([
      ['flaky', 'steady'],
      ['steady', 'flaky'],
      ['steady', 'flaky'],
    ]);
    const health = trace.filter((event) => event.type === 'tool-health');
    expect(health).toHaveLength(2);
    expect(health[0]).toMatchObject({
      step: 1,
      offered: ['steady', 'flaky'],
      tools: [{ name: 'flaky', calls: 1, failures: 1, successRate: 0, weight: 0.5, circuit: 'closed' }],
    });
    expect(health[1]).toMatchObject({
      step: 2,
      tools: [{ name: 'flaky' }, { name: 'steady', successRate: 1, weight: 1 }],
    });
  });

  it('keeps the declared order by default', async () => {
    const { model, result } = run(undefined);
    await result;
    expect(model.calls.map((call) => call.tools?.map((tool) => tool.name))).toEqual([
      ['flaky', 'steady'],
      ['flaky', 'steady'],
      ['flaky', 'steady'],
    ]);
  });

  it('rejects an unknown order', () => {
    expect(() => createLoop({ model: scriptedModel([]), toolOrder: 'random' as ToolOrder })).toThrow(/toolOrder/);
  });
});

describe('tool-health events and redaction', () => {
  it('redacts a tool name that looks like a secret, in the figures and the order', async () => {
    const secretName = 'sk_live_abc123def456ghi789jkl012';
    const tool = defineTool({
      name: secretName,
      description: 'Odd name.',
      input: z.object({}),
      access: 'read',
      execute: () => 'ok',
    });
    const loop = createLoop({
      model: scriptedModel([toolCall(secretName, {}), reply('done')]),
      tools: [tool],
      clock: virtualClock(),
    });
    const { trace } = await loop.run({ goal: 'Use it.' });
    const health = trace.find((event) => event.type === 'tool-health');
    expect(JSON.stringify(health)).not.toContain(secretName);
    expect(health).toMatchObject({ tools: [{ name: '[redacted]' }], offered: ['[redacted]'] });
  });
});
