/**
 * Review decisions across a real SQLite file and processes: a run stopped for review in one process is decided in
 * another, and again from this one; each decision is taken exactly once, and a conflicting one is refused, typed.
 */
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { z } from 'zod';
import { createLoop, evaluators, ReviewError, type Model } from 'loopstate';
import { sqliteStore } from 'loopstate/sqlite';
import { buildCrashChild, removeCrashChild, runChild } from './crash-harness.js';

const ENTRY = join('fixtures', 'review-child.ts');
const directory = mkdtempSync(join(tmpdir(), 'loopstate-review-'));
let child = '';

beforeAll(async () => {
  child = await buildCrashChild(ENTRY);
}, 120_000);
afterAll(() => {
  removeCrashChild(ENTRY);
  rmSync(directory, { recursive: true, force: true });
});

interface ChildResult {
  stopReason?: string;
  output?: unknown;
  pendingReview?: { outputHash: string; rawOutput: string } | null;
  error?: string;
  name?: string;
}

async function inChild(db: string, log: string, ...args: string[]): Promise<ChildResult> {
  const outcome = await runChild(child, [db, log, ...args]);
  expect(outcome.stderr).toBe('');
  expect(outcome.code).toBe(0);
  return JSON.parse(outcome.stdout.trim().split('\n').at(-1) ?? '{}') as ChildResult;
}

describe('review decisions across processes on a SQLite file', () => {
  it('decides once: reject in one process, accept in another, a conflicting decision refused in a third', async () => {
    const db = join(directory, 'review.db');
    const log = join(directory, 'model.log');
    const stopped = await inChild(db, log, 'run', 'r1');
    expect(stopped.stopReason).toBe('needs_human');
    const first = stopped.pendingReview!;
    expect(first.rawOutput).toBe('{"order":"O-7","amount":250}');

    const rejected = JSON.stringify({ accept: false, reason: 'the total is 240', outputHash: first.outputHash });
    const second = await inChild(db, log, 'resume', 'r1', rejected);
    expect(second.stopReason).toBe('needs_human');
    expect(second.pendingReview!.rawOutput).toBe('{"order":"O-7","amount":240}');
    // The rejection sent again (a retried request) returns the run as it stands; nothing runs.
    expect(await inChild(db, log, 'resume', 'r1', rejected)).toMatchObject({
      stopReason: 'needs_human',
      pendingReview: second.pendingReview,
    });
    // Accepting the first output now is refused: it was rejected.
    expect(
      await inChild(db, log, 'resume', 'r1', JSON.stringify({ accept: true, outputHash: first.outputHash })),
    ).toMatchObject({ error: 'review_already_decided', name: 'ReviewError' });

    // This process, another loop on the same file, accepts the second output.
    const model: Model = {
      id: 'review-test-model',
      generate: () => Promise.reject(new Error('no model call is due: the output is accepted')),
    };
    const store = sqliteStore({ path: db });
    const loop = createLoop({
      model,
      store,
      evaluate: evaluators.chain(
        evaluators.schema(z.object({ order: z.string(), amount: z.number() })),
        evaluators.review({ when: (refund) => refund.amount > 100, reason: 'refunds over 100 need a person' }),
      ),
    });
    const accepted = { accept: true as const, outputHash: second.pendingReview!.outputHash };
    const done = await loop.resume('r1', { review: accepted });
    expect(done).toMatchObject({ stopReason: 'completed', output: { order: 'O-7', amount: 240 }, pendingReview: null });
    expect(done.trace.filter((event) => event.type === 'review-decided').map((event) => event.accepted)).toEqual([
      false,
      true,
    ]);
    // The same accept again, from another process: the recorded result.
    expect(await inChild(db, log, 'resume', 'r1', JSON.stringify(accepted))).toMatchObject({
      stopReason: 'completed',
      output: { order: 'O-7', amount: 240 },
    });
    const conflicting = await loop
      .resume('r1', { review: { accept: false, reason: 'changed my mind', outputHash: accepted.outputHash } })
      .catch((error: unknown) => error);
    expect(conflicting).toBeInstanceOf(ReviewError);
    expect(conflicting).toMatchObject({ code: 'review_already_decided', outputHash: accepted.outputHash });
    // Two model calls in all: the first reply, and the one after the rejection; none repeated.
    expect(readFileSync(log, 'utf8').trim().split('\n')).toEqual(['model:0', 'model:1']);
    await store.close?.();
  });
});
