import { describe, expect, it } from 'vitest';
import { z } from 'zod';
import { createLoop, defineTool, memoryStore, type Tool } from '../../index.js';
import { durableRunsOf } from '../../engine/loop.js';
import { reply, scriptedModel, toolCall } from '../../testing/index.js';
import { driveLeg, resumeRequest, runRequest } from './run-leg.js';

const lookup = (calls: string[]) =>
  defineTool({
    name: 'lookup',
    description: 'Look an order up.',
    input: z.object({ order_id: z.string() }),
    access: 'destructive',
    execute: async ({ order_id }) => {
      calls.push(order_id);
      return { found: order_id };
    },
  });

describe('driveLeg', () => {
  it('takes the tools the loop has now, for a new run and for a resume (as loop.run and loop.resume do)', async () => {
    // The array an MCP connection changes in place on `tools/list_changed`.
    const tools: Tool[] = [];
    const calls: string[] = [];
    const loop = createLoop({
      model: scriptedModel([toolCall('lookup', { order_id: 'O-1' }), reply('Found O-1.')]),
      tools,
      store: memoryStore(),
      policy: { requireApproval: ['destructive'] },
    });
    const runs = durableRunsOf(loop)!;
    tools.push(lookup(calls));
    const stopped = await driveLeg(loop, runs, runRequest({ goal: 'Find O-1', runId: 'leg-tools' }).request);
    expect(stopped.stopReason, stopped.detail).toBe('needs_human');
    expect(stopped.pendingApprovals.map((call) => call.tool)).toEqual(['lookup']);
    // Replaced between the legs: the resume runs the current one.
    const later: string[] = [];
    tools.splice(0, 1, lookup(later));
    const approvals = { [stopped.pendingApprovals[0]!.callId]: { approve: true as const } };
    const done = await driveLeg(loop, runs, resumeRequest('leg-tools', { approvals }).request);
    expect(done.stopReason, done.detail).toBe('completed');
    expect(calls).toEqual([]);
    expect(later).toEqual(['O-1']);
  });
});
