/**
 * The `runTools` effect on a real loop: answers in the reply's order whatever ran and whatever was refused,
 * and the tool-health event says what the health object says.
 */
import { describe, expect, it } from 'vitest';
import { z } from 'zod';
import { createLoop } from '../loop.js';
import { defineTool, ToolHealth } from '../tools/index.js';
import { reply, scriptedModel, toolCall } from '../../testing/index.js';
import { virtualClock } from '../../testing/virtual-clock.js';

const lookup = defineTool({
  name: 'lookup',
  description: 'Look a key up.',
  input: z.object({ key: z.string() }),
  access: 'read',
  execute: ({ key }) => `value of ${key}`,
});
const fails = defineTool({
  name: 'fails',
  description: 'Always fails.',
  input: z.object({}),
  access: 'read',
  execute: () => {
    throw new Error('backend down');
  },
});

describe('performToolRound', () => {
  it('answers run and refused calls in the order of the reply, refusals between the calls that ran', async () => {
    const model = scriptedModel([
      toolCall([
        { id: 'b', name: 'lookup', args: { key: 'k1' } },
        { id: 'c', name: 'lookup', args: { key: 'k1' } },
        { id: 'e', name: 'lookup', args: { key: 'k2' } },
        { id: 'g', name: 'lookup', args: { key: 'k2' } },
        { id: 'f', name: 'fails', args: {} },
      ]),
      reply('done'),
    ]);
    const loop = createLoop({ model, tools: [lookup, fails], clock: virtualClock() });
    const result = await loop.run({ goal: 'Look k1 and k2 up.' });
    expect(result.stopReason).toBe('completed');
    const answers = result.messages.flatMap((message) =>
      message.role === 'tool' ? [[message.toolCallId, String(message.content)]] : [],
    );
    expect(answers.map(([id]) => id)).toEqual(['b', 'c', 'e', 'g', 'f']);
    const byId = Object.fromEntries(answers) as Record<string, string>;
    expect(byId.b).toBe('value of k1');
    expect(byId.e).toBe('value of k2');
    // The duplicates are answered, not run: their answers are not the values, and each is its own call's.
    for (const id of ['c', 'g']) expect(byId[id]).toMatch(/duplicate|same/i);
    expect(byId.f).toMatch(/backend down/);
    const ended = result.trace.flatMap((event) => (event.type === 'tool-end' ? [[event.callId, event.status]] : []));
    expect(ended).toEqual([
      ['b', 'ok'],
      ['e', 'ok'],
      ['f', 'error'],
    ]);
  });

  it("records every tool's health figures in the tool-health event, in the health object's order", async () => {
    const toolHealth = new ToolHealth();
    const model = scriptedModel([
      toolCall([
        { name: 'fails', args: {} },
        { name: 'lookup', args: { key: 'k1' } },
      ]),
      reply('done'),
    ]);
    const loop = createLoop({ model, tools: [lookup, fails], clock: virtualClock(), toolHealth });
    const result = await loop.run({ goal: 'Look k1 up.' });
    const events = result.trace.filter((event) => event.type === 'tool-health');
    expect(events).toHaveLength(1);
    const expected = Object.entries(toolHealth.snapshot()).map(([name, stats]) => ({
      name,
      calls: stats.calls,
      successes: stats.successes,
      failures: stats.failures,
      consecutiveFailures: stats.consecutiveFailures,
      successRate: stats.successRate,
      meanLatencyMs: stats.meanLatencyMs,
      weight: stats.weight,
      circuit: stats.circuit,
    }));
    expect(expected.map(({ name }) => name).sort()).toEqual(['fails', 'lookup']);
    expect(events[0]?.type === 'tool-health' && events[0].tools).toEqual(expected);
  });
});
