/**
 * Crash tests with real processes: a child runs the refund loop on SQLite and is SIGKILLed at an
 * effect boundary; a new child resumes the run, a third approves the refund, and the side-effect log
 * proves that no completed model or tool call ran twice and no non-idempotent call was re-run blindly.
 */
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { buildCrashChild, removeCrashChild, runChild, type ChildOutcome } from './crash-harness.js';

let script: string;
const scratch = mkdtempSync(join(tmpdir(), 'loopstate-crash-'));

beforeAll(async () => {
  script = await buildCrashChild();
}, 60_000);
afterAll(() => {
  rmSync(scratch, { recursive: true, force: true });
  removeCrashChild();
});

interface Parsed {
  status: string;
  stopReason: string;
  detail: string;
  pendingApprovals: { callId: string; tool: string }[];
  output: unknown;
  usage: { modelCalls: number; toolCalls: number };
  warnings: string[];
}

function parsed(outcome: ChildOutcome): Parsed {
  if (outcome.code !== 0) throw new Error(`child failed (${outcome.code ?? outcome.signal}): ${outcome.stderr}`);
  return JSON.parse(outcome.stdout) as Parsed;
}

/** Runs until the approval stop (resuming after the kill if there was one), then approves in a third process. */
async function crashAndFinish(killAt: string | null, env: Record<string, string> = {}) {
  const dir = mkdtempSync(join(scratch, 'case-'));
  const db = join(dir, 'loops.db');
  const logFile = join(dir, 'effects.log');
  const first = await runChild(script, [db, logFile, 'run'], killAt === null ? env : { ...env, KILL_AT: killAt });
  let stopped: Parsed;
  if (killAt === null) {
    stopped = parsed(first);
  } else {
    expect(first.signal, first.stderr).toBe('SIGKILL');
    stopped = parsed(await runChild(script, [db, logFile, 'resume'], env));
  }
  expect(stopped.status).toBe('needs_human');
  const [pending] = stopped.pendingApprovals;
  expect(pending?.tool).toBe('refund');
  const done = parsed(await runChild(script, [db, logFile, 'approve', pending!.callId], env));
  const lines = readFileSync(logFile, 'utf8').split('\n').filter(Boolean);
  return { done, lines };
}

const count = (lines: string[], prefix: string) => lines.filter((line) => line.startsWith(prefix)).length;

/** `askedAgain`: the model calls whose replies the crash lost before they were committed (paid twice). */
function expectNothingRepeated(lines: string[], askedAgain: number[] = [], modelCalls = 3) {
  for (let step = 0; step < modelCalls; step++)
    expect(count(lines, `model:${step}`), `model call ${step}`).toBe(askedAgain.includes(step) ? 2 : 1);
  expect(count(lines, 'transient-failure')).toBe(1);
  expect(count(lines, 'effect:charge_fee:'), 'the fee is charged once').toBe(1);
  expect(count(lines, 'effect:refund:'), 'the refund runs once').toBe(1);
}

// Each case is its own database and processes: they run side by side.
describe.concurrent('SIGKILL at each effect boundary, resumed in a new process', () => {
  it('uninterrupted: stops for approval, the approval in another process completes it', async () => {
    const { done, lines } = await crashAndFinish(null);
    expect(done.stopReason).toBe('completed');
    expect(done.output).toEqual({ refunded: 'O-7' });
    expectNothingRepeated(lines);
    expect(count(lines, 'start:charge_fee:')).toBe(1);
  }, 30_000);

  it('killed before a model call: the call is made once, by the resuming process', async () => {
    const { done, lines } = await crashAndFinish('before-model-0');
    expect(done.stopReason).toBe('completed');
    expectNothingRepeated(lines);
  }, 30_000);

  it('killed after a reply arrived, before it was committed (with the intents of its round): the model is asked again, nothing else repeats', async () => {
    const { done, lines } = await crashAndFinish('after-model-0');
    expect(done.stopReason).toBe('completed');
    expectNothingRepeated(lines, [0]);
    // The lost reply is not counted: usage is what the journal holds.
    expect(done.usage.modelCalls).toBe(4);
  }, 30_000);

  it('killed inside a round of idempotent calls only (nothing committed before it runs): the reply is asked again and the lookup re-runs under the same key', async () => {
    // No snapshot (which commits the events before it) between the reply and the lookup.
    const { done, lines } = await crashAndFinish('mid-lookup', { SPLIT_ROUND: '1', SNAPSHOT_EVERY: '32' });
    expect(done.stopReason).toBe('completed');
    expectNothingRepeated(lines, [0], 4);
    const starts = lines.filter((line) => line.startsWith('start:lookup:'));
    expect(starts).toHaveLength(2);
    expect(new Set(starts).size).toBe(1);
    expect(count(lines, 'start:charge_fee:')).toBe(1);
  }, 30_000);

  it('killed before the model call after a round of idempotent calls, commits not grouped: their outcomes and the reply were committed then, nothing repeats', async () => {
    const { done, lines } = await crashAndFinish('before-model-1', {
      SPLIT_ROUND: '1',
      SNAPSHOT_EVERY: '32',
      MAX_UNCOMMITTED_STEPS: '1',
    });
    expect(done.stopReason).toBe('completed');
    expectNothingRepeated(lines, [], 4);
    expect(count(lines, 'start:lookup:')).toBe(1);
  }, 30_000);

  it('killed before the model call after a round of idempotent calls, commits grouped: that step was not committed, so the model is asked again and the lookup re-runs under the same key', async () => {
    const { done, lines } = await crashAndFinish('before-model-1', {
      SPLIT_ROUND: '1',
      SNAPSHOT_EVERY: '32',
      MAX_UNCOMMITTED_STEPS: '4',
    });
    expect(done.stopReason).toBe('completed');
    expectNothingRepeated(lines, [0], 4);
    const starts = lines.filter((line) => line.startsWith('start:lookup:'));
    expect(starts).toHaveLength(2);
    expect(new Set(starts).size).toBe(1);
    expect(count(lines, 'start:charge_fee:')).toBe(1);
  }, 30_000);

  it('killed inside an idempotent tool call of a round with a write (the reply and intents committed): re-run with the same key', async () => {
    const { done, lines } = await crashAndFinish('mid-lookup');
    expect(done.stopReason).toBe('completed');
    expectNothingRepeated(lines);
    const starts = lines.filter((line) => line.startsWith('start:lookup:'));
    expect(starts).toHaveLength(2);
    expect(new Set(starts).size).toBe(1);
  }, 30_000);

  it('killed inside a non-idempotent call after its effect: checkOutcome finds it, it is not run again', async () => {
    const { done, lines } = await crashAndFinish('mid-charge-after-effect');
    expect(done.stopReason).toBe('completed');
    expectNothingRepeated(lines);
    expect(count(lines, 'start:charge_fee:')).toBe(1);
  }, 30_000);

  it('killed inside a non-idempotent call before its effect: checkOutcome says not done, it runs once', async () => {
    const { done, lines } = await crashAndFinish('mid-charge-before-effect');
    expect(done.stopReason).toBe('completed');
    expectNothingRepeated(lines);
    expect(count(lines, 'start:charge_fee:')).toBe(2);
  }, 30_000);

  it('killed during a backoff: the resumed run waits out the backoff and retries once', async () => {
    const { done, lines } = await crashAndFinish('backoff');
    expect(done.stopReason).toBe('completed');
    expectNothingRepeated(lines);
  }, 30_000);

  it('killed while waiting for approval, and again right after the approval: the decision holds and the run completes', async () => {
    const dir = mkdtempSync(join(scratch, 'case-'));
    const db = join(dir, 'loops.db');
    const logFile = join(dir, 'effects.log');
    const stopped = parsed(await runChild(script, [db, logFile, 'run']));
    // The stop for approval is in the store, not in a process's memory: any process reads it back.
    expect(parsed(await runChild(script, [db, logFile, 'resume'])).status).toBe('needs_human');
    // Approved, the refund runs, and the process dies before the next model call.
    const approving = await runChild(script, [db, logFile, 'approve', stopped.pendingApprovals[0]!.callId], {
      KILL_AT: 'before-model-2',
    });
    expect(approving.signal, approving.stderr).toBe('SIGKILL');
    const done = parsed(await runChild(script, [db, logFile, 'resume']));
    expect(done.stopReason).toBe('completed');
    expectNothingRepeated(readFileSync(logFile, 'utf8').split('\n').filter(Boolean));
  }, 30_000);

  it('two processes approving at once: one drives the run, the other is told it is busy or given its result; the refund runs once', async () => {
    const dir = mkdtempSync(join(scratch, 'case-'));
    const db = join(dir, 'loops.db');
    const logFile = join(dir, 'effects.log');
    const stopped = parsed(await runChild(script, [db, logFile, 'run']));
    const callId = stopped.pendingApprovals[0]!.callId;
    const outcomes = await Promise.all([
      runChild(script, [db, logFile, 'approve', callId]),
      runChild(script, [db, logFile, 'approve', callId]),
    ]);
    const winners = outcomes.filter((outcome) => outcome.code === 0);
    const losers = outcomes.filter((outcome) => outcome.code === 3);
    expect(winners.length + losers.length).toBe(2);
    expect(winners.length).toBeGreaterThanOrEqual(1);
    // The same decision twice is a retry: the second either found the run busy or returns its result.
    for (const loser of losers) expect((JSON.parse(loser.stdout) as { errorCode: string }).errorCode).toBe('run_busy');
    for (const winner of winners) expect(parsed(winner).stopReason).toBe('completed');
    expectNothingRepeated(readFileSync(logFile, 'utf8').split('\n').filter(Boolean));
  }, 30_000);
});
