/**
 * A run journalled with the digests loopstate wrote before it had its own hash (sha1 fingerprints and
 * digests, sha256 argument hashes), kept as written (never regenerated): resumed now, its approval still
 * binds to the call, and the no-progress counts go on from what the journal saw (a repeated call is a
 * repeat, the same rejected output is the same). The run: lookup O-7, a draft the evaluator rejects, then a
 * refund of O-7 waiting for approval.
 */
import { readFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';
import { z } from 'zod';
import {
  ApprovalError,
  argumentsHash,
  createLoop,
  defineTool,
  evaluators,
  memoryStore,
  type LoopConfig,
  type Store,
  type StoreRow,
} from 'loopstate';
import { reply, scriptedModel, toolCall, virtualClock } from 'loopstate/testing';
import { refundTool } from '../support/refund-tool.js';

const fixture = JSON.parse(
  readFileSync(join(dirname(fileURLToPath(import.meta.url)), 'fixtures', 'records-sha-digests.json'), 'utf8'),
) as { run: string; snapshot: StoreRow | null; journal: StoreRow[] };
const runId = 'fixture-digests';
/** The sha256 of the refund's canonical arguments, as the run record holds it. */
const recordedHash = '2be36b0fbcb375a1833bfe319eba4b2775ac62e4ffc335929761976eb79fb346';

async function loadFixture(): Promise<Store> {
  const store = memoryStore();
  const lease = { owner: 'fixture-loader', until: Date.now() + 60_000 };
  await store.createRun(runId, fixture.run, lease);
  await store.append(runId, fixture.journal, lease);
  if (fixture.snapshot !== null) await store.writeSnapshot(runId, fixture.snapshot, lease);
  await store.releaseLease(runId, lease.owner);
  return store;
}

function fixtureLoop(
  store: Store,
  script: Parameters<typeof scriptedModel>[0],
  noProgress: LoopConfig['noProgress'],
  refunds: string[] = [],
) {
  const lookup = defineTool({
    name: 'lookup',
    description: 'Read an order.',
    input: z.object({ order_id: z.string() }),
    access: 'read',
    execute: ({ order_id }) => ({ order_id, total: 40 }),
  });
  const refund = refundTool(refunds);
  return createLoop({
    model: scriptedModel(script),
    tools: [lookup, refund],
    evaluate: [evaluators.rule((output) => String(output).includes('Refunded'), 'say that the order was refunded')],
    limits: { maxRetries: 5 },
    noProgress,
    clock: virtualClock(),
    store,
  });
}

describe('a run journalled with sha digests', () => {
  it('is waiting for the refund, bound to its recorded argument hash', async () => {
    const waiting = await fixtureLoop(await loadFixture(), [], undefined).resume(runId);
    expect(waiting.pendingApprovals).toEqual([
      { callId: 'call_2_0', tool: 'refund', args: { order_id: 'O-7' }, argumentsHash: recordedHash, expiresAt: null },
    ]);
  });

  it('takes an approval that names the recorded hash, and refuses one that names another', async () => {
    const refunds: string[] = [];
    const refused = fixtureLoop(await loadFixture(), [], undefined, refunds).resume(runId, {
      approvals: { call_2_0: { approve: true, argumentsHash: '0'.repeat(64) } },
    });
    await expect(refused).rejects.toThrow(ApprovalError);
    const done = await fixtureLoop(await loadFixture(), [reply('Refunded O-7.')], undefined, refunds).resume(runId, {
      approvals: { call_2_0: { approve: true, argumentsHash: recordedHash } },
    });
    expect(done.stopReason, done.detail).toBe('completed');
    expect(refunds).toEqual(['O-7']);
  });

  it("takes an approval that names today's hash of the recorded arguments", async () => {
    expect(argumentsHash({ order_id: 'O-7' })).not.toBe(recordedHash);
    const done = await fixtureLoop(await loadFixture(), [reply('Refunded O-7.')], undefined).resume(runId, {
      approvals: { call_2_0: { approve: true, argumentsHash: argumentsHash({ order_id: 'O-7' }) } },
    });
    expect(done.stopReason, done.detail).toBe('completed');
  });

  it('counts the lookup repeated after the resume as a repeat of the journalled one', async () => {
    const loop = fixtureLoop(
      await loadFixture(),
      [toolCall('lookup', { order_id: 'O-7' }), toolCall('lookup', { order_id: 'O-7' }), reply('Refunded O-7.')],
      { repeatedToolCall: 2 },
    );
    const done = await loop.resume(runId, { approvals: { call_2_0: { approve: true } } });
    expect(done.stopReason, done.detail).toBe('no_progress');
    // The journalled lookup, then two after the resume: the first of them is the nudge, the second the stop.
    expect(done.detail).toMatch(
      /lookup was called with the same arguments and brought the same result 3 times in this task.*repeatedToolCall/,
    );
  });

  it('counts the same rejected draft after the resume as the same evaluator reason', async () => {
    const loop = fixtureLoop(await loadFixture(), [reply('Draft: O-7 totals 40.'), reply('Refunded O-7.')], {
      sameEvaluatorReason: 2,
    });
    const done = await loop.resume(runId, { approvals: { call_2_0: { approve: true } } });
    expect(done.stopReason, done.detail).toBe('no_progress');
    expect(done.detail).toMatch(/the same output was rejected 2 times for the same reason.*sameEvaluatorReason/);
  });
});
