import { describe, expect, it } from 'vitest';
import { z } from 'zod';
import { createLoop, defineTool, evaluators, memoryStore, type Tool } from '../../index.js';
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

describe('a review decision through a leg', () => {
  it('continues a run stopped for review with the decision, keyed apart from approvals', async () => {
    const loop = createLoop({
      model: scriptedModel([reply('{"amount":250}')]),
      store: memoryStore(),
      evaluate: [evaluators.json(), evaluators.review({ when: () => true })],
    });
    const runs = durableRunsOf(loop)!;
    const stopped = await driveLeg(loop, runs, runRequest({ goal: 'Refund', runId: 'leg-review' }).request);
    expect(stopped.pendingReview?.rawOutput).toBe('{"amount":250}');
    const review = { accept: true as const, outputHash: stopped.pendingReview!.outputHash };
    const leg = resumeRequest('leg-review', { review });
    expect(leg.request).toEqual({ kind: 'resume', runId: 'leg-review', review });
    // Approvals alone keep their key; a review is keyed by itself.
    expect(leg.workflowId).not.toBe(resumeRequest('leg-review').workflowId);
    expect(resumeRequest('leg-review', { review }).workflowId).toBe(leg.workflowId);
    const done = await driveLeg(loop, runs, leg.request);
    expect(done).toMatchObject({ stopReason: 'completed', output: { amount: 250 }, pendingReview: null });
    // The leg re-entered after a crash: the same decision returns the result.
    expect((await driveLeg(loop, runs, leg.request)).stopReason).toBe('completed');
  });
});
