/**
 * Cassettes written by earlier versions stay readable and replayable: fixtures are read, never
 * regenerated. A failure here means old cassettes in users' repositories stopped working.
 */
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';
import { z } from 'zod';
import { createLoop, defineTool } from '../../index.js';
import { virtualClock } from '../../testing/index.js';
import { readCassette } from './cassette-format.js';
import { replayModel } from './replay-model.js';

const fixture = (name: string) => fileURLToPath(new URL(`./fixtures/${name}`, import.meta.url));

describe('schemaVersion 1 fixture', () => {
  it('reads, and replays an order-status run with a retried 429', async () => {
    const path = fixture('v1-order-status.json');
    expect(readCassette(path).calls.map((call) => call.occurrence)).toEqual([0, 0, 1]);
    const getOrder = defineTool({
      name: 'get_order',
      description: 'Look up one order by id.',
      input: z.object({ order_id: z.string() }),
      access: 'read',
      execute: async ({ order_id }) => ({ order_id, status: 'shipped' }),
    });
    const model = replayModel(path);
    const result = await createLoop({
      model,
      instructions: 'Answer order questions.',
      tools: [getOrder],
      clock: virtualClock(),
    }).run({ goal: 'Where is O-101?' });
    model.assertComplete();
    expect([result.stopReason, result.output, result.usage.modelCalls]).toEqual(['completed', 'Shipped.', 3]);
    expect(result.trace.find((event) => event.type === 'run-start')).toMatchObject({ modelId: 'gpt-4.1-mini' });
    // Written before models reported provider, server, settings and response metadata: none is made up.
    expect([model.provider, model.server, model.settings]).toEqual([undefined, undefined, undefined]);
    expect(result.trace.filter((event) => event.type === 'step-end' && event.metadata !== undefined)).toEqual([]);
  });
});
