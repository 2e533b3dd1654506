/**
 * The checks that make a person's decisions fail closed, before anything of the run changes. Decisions
 * are keyed by call id, and a call id is whatever the model sent (`constructor`, `__proto__` too), so
 * they are read into a `Map` from the caller's object's own keys and never looked up on an object.
 */
import { z } from 'zod';
import { LoopConfigError } from '../../contracts/errors.js';
import { canonicalJson } from '../progress/index.js';
import { digest64 } from '../progress/digest.js';
import type { Store } from '../../contracts/store.js';
import { ApprovalError } from './durable-errors.js';
import { type ApprovalDecision, type Decisions } from './records.js';
import { decodeJournalRecord } from './record-codec.js';
import { type RunRecord } from './run-record.js';
import type { ResumePlan } from './resume-plan.js';
import type { ModelResponse } from '../../contracts/model.js';
import type { RunSession } from '../runtime/run-session.js';
import { DEFAULT_TOOL_POLICY } from '../tools/index.js';

/**
 * Canonical JSON of the arguments, hashed (16 hex characters): what an approval is bound to. A waiting call's
 * `pendingApprovals` entry carries the hash it was recorded with; a decision may name that one or this one.
 * @example
 * const decision = { approve: true, argumentsHash: argumentsHash({ order_id: 'O-7' }) } as const;
 */
export function argumentsHash(args: unknown): string {
  return digest64(canonicalJson(args ?? null));
}

/**
 * Whether a decision's hash names the recorded arguments: the hash recorded with them (whatever made it: runs
 * journalled before loopstate had its own hash hold sha256 ones) or today's hash of them. Never recomputes an
 * old algorithm, so no runtime needs it.
 */
function namesRecordedArguments(decided: string, pending: { args: unknown; argumentsHash: string }): boolean {
  return decided === pending.argumentsHash || decided === argumentsHash(pending.args);
}

// Discriminated on `approve`, so a rejection without a reason is told as `approvals.<callId>.reason`.
const decisionSchema = z.discriminatedUnion('approve', [
  z.object({ approve: z.literal(true), argumentsHash: z.string().optional() }).strict(),
  z
    .object({
      approve: z.literal(false),
      reason: z.string().min(1, 'say why, so the model can be told'),
      argumentsHash: z.string().optional(),
    })
    .strict(),
]);

/**
 * The decisions of `approvals` (an object keyed by call id: its own keys, `__proto__` included), or
 * undefined without any. A decision that is not `{ approve: true }` or `{ approve: false, reason }` is a
 * programming error: refused as run input.
 */
export function checkedApprovals(approvals: unknown): Map<string, ApprovalDecision> | undefined {
  if (approvals === undefined) return undefined;
  const refuse = (issues: { path: string; message: string }[]) => new LoopConfigError({ scope: 'run_input', issues });
  if (typeof approvals !== 'object' || approvals === null || Array.isArray(approvals))
    throw refuse([{ path: 'approvals', message: 'expected an object of decisions keyed by call id' }]);
  const decisions = new Map<string, ApprovalDecision>();
  const issues: { path: string; message: string }[] = [];
  for (const callId of Object.keys(approvals)) {
    const parsed = decisionSchema.safeParse((approvals as Record<string, unknown>)[callId]);
    if (parsed.success) decisions.set(callId, parsed.data);
    else
      for (const issue of parsed.error.issues)
        issues.push({ path: ['approvals', callId, ...issue.path.map(String)].join('.'), message: issue.message });
  }
  if (issues.length > 0) throw refuse(issues);
  return decisions;
}

/** Fails closed: every decision must name a waiting, undecided, unexpired call, and every waiting call needs one. */
export function checkApprovals(record: RunRecord, decisions: Decisions, now: number): void {
  const { runId } = record;
  const alreadyDecided = (callId: string) =>
    new ApprovalError({
      code: 'approval_already_decided',
      runId,
      callId,
      message: `call ${callId} of run ${runId} was decided already; a decision is taken once (the same decision sent again returns the run's result)`,
    });
  if (record.state !== 'waiting') {
    const decided = [...decisions.keys()].find((callId) => record.decidedCalls.includes(callId));
    if (decided !== undefined) throw alreadyDecided(decided);
    throw new ApprovalError({
      code: 'run_not_waiting',
      runId,
      message: `run ${runId} is not waiting for approval (it is ${record.state}); resume it without approvals`,
    });
  }
  const decided = [...decisions.keys()].find((callId) => record.decidedCalls.includes(callId));
  if (decided !== undefined) throw alreadyDecided(decided);
  const review = record.pendingReview ?? null;
  if (review !== null)
    throw new ApprovalError({
      code: 'run_not_waiting',
      runId,
      message: `run ${runId} waits for a review of its output (task ${review.taskId}), not for approval; resume it with review: { accept }`,
    });
  for (const [callId, decision] of decisions) {
    const pending = record.pendingApprovals.find((approval) => approval.callId === callId);
    if (pending === undefined)
      throw new ApprovalError({
        code: 'approval_unknown_call',
        runId,
        callId,
        message: `run ${runId} has no call ${callId} waiting for approval; waiting: ${record.pendingApprovals.map((approval) => approval.callId).join(', ')}`,
      });
    if (pending.expiresAt !== null && now > pending.expiresAt)
      throw new ApprovalError({
        code: 'approval_expired',
        runId,
        callId,
        message: `the approval of call ${callId} (${pending.tool}) of run ${runId} expired at ${new Date(pending.expiresAt).toISOString()}`,
      });
    if (decision.argumentsHash !== undefined && !namesRecordedArguments(decision.argumentsHash, pending)) {
      throw new ApprovalError({
        code: 'approval_arguments_changed',
        runId,
        callId,
        message: `call ${callId} (${pending.tool}) of run ${runId} has other arguments than the ones approved (hash ${pending.argumentsHash}, not ${decision.argumentsHash})`,
      });
    }
  }
  const undecided = record.pendingApprovals.filter((approval) => !decisions.has(approval.callId));
  if (undecided.length > 0)
    throw new ApprovalError({
      code: 'approvals_incomplete',
      runId,
      callId: undecided[0]?.callId ?? null,
      message: `run ${runId} waits for a decision on every call; missing: ${undecided.map((approval) => approval.callId).join(', ')}`,
    });
}

/**
 * Whether the journal holds exactly these decisions on these calls, as taken (approve, reason): a request sent again.
 * Reads only what it needs: nothing when the record lists a call as undecided; else the event rows (no model,
 * tool or chunk rows), latest first, decoding only those that carry decisions, until every call asked about is found.
 */
export async function wereTaken(store: Store, record: RunRecord, decisions: Decisions): Promise<boolean> {
  if (decisions.size === 0) return false;
  for (const callId of decisions.keys()) if (!record.decidedCalls.includes(callId)) return false;
  const { runId } = record;
  const rows = await store.readJournal(runId, 0, ['event']);
  const taken = new Map<string, ApprovalDecision>();
  // A call is decided once (the record's decidedCalls refuses another), so the latest decision on it is the one.
  for (let index = rows.length - 1; index >= 0 && taken.size < decisions.size; index -= 1) {
    const row = rows[index]!;
    // Only an event that continued a stop carries decisions, as its own `approvals` key: a body without that
    // text has none (in a JSON string the quotes would be escaped), so it is not parsed.
    if (row.kind !== 'event' || !row.body.includes('"approvals"')) continue;
    const journalled = decodeJournalRecord(row.body, runId, row.seq);
    if (journalled.kind !== 'event' || journalled.approvals === undefined) continue;
    for (const [callId, decision] of Object.entries(journalled.approvals))
      if (decisions.has(callId) && !taken.has(callId)) taken.set(callId, decision);
  }
  const essence = (decision: ApprovalDecision | undefined) =>
    decision === undefined
      ? null
      : canonicalJson(decision.approve ? { approve: true } : { approve: false, reason: decision.reason });
  return [...decisions].every(
    ([callId, decision]) => taken.has(callId) && essence(taken.get(callId)) === essence(decision),
  );
}

/**
 * The journal must hold the very call the person decided on: the same tool and arguments as the stop recorded.
 * The arguments themselves are compared (canonical JSON), not their hashes, so a record's hash format never matters.
 */
export function checkArgumentsUnchanged(record: RunRecord, plan: ResumePlan, decisions: Decisions): void {
  const stop = plan.events.at(-1);
  if (stop === undefined || stop.seq !== record.waitingSeq) {
    throw new ApprovalError({
      code: 'run_not_waiting',
      runId: record.runId,
      message: `run ${record.runId}'s journal does not end at the stop it waits at (seq ${String(record.waitingSeq)})`,
    });
  }
  for (const callId of decisions.keys()) {
    const pending = record.pendingApprovals.find((approval) => approval.callId === callId);
    // A version 5 event leaves out pending calls only when there are none.
    const call = (stop.delta.fields.pendingCalls ?? []).find(({ request }) => request.id === callId);
    if (
      pending === undefined ||
      call === undefined ||
      call.request.name !== pending.tool ||
      canonicalJson(call.args ?? null) !== canonicalJson(pending.args ?? null)
    ) {
      throw new ApprovalError({
        code: 'approval_arguments_changed',
        runId: record.runId,
        callId,
        message: `call ${callId} of run ${record.runId} is not the call that was put up for approval (tool or arguments differ)`,
      });
    }
  }
}

/**
 * Whether a reply may stop the run to wait for a person's approval: it calls a tool whose access the policy's
 * `requireApproval` lists, and no `decide` hook answers first. It only tells the journal a snapshot of the state
 * before the reply is worth taking (see `RunJournal.generate`). With a hook, which is not called here and often lets
 * most such calls through, none is taken: a run that never waits would pay a snapshot a reply (up to one every
 * quarter of `snapshotEvery` events) for nothing; a resume after the hook's `needs_approval` replays events instead.
 */
export function mayWaitForApproval(response: ModelResponse, session: RunSession): boolean {
  if (!Array.isArray(response.toolCalls) || response.toolCalls.length === 0) return false;
  if (session.config.policy?.decide !== undefined) return false;
  const held: readonly string[] = session.config.policy?.requireApproval ?? DEFAULT_TOOL_POLICY.requireApproval;
  return response.toolCalls.some((call) => {
    const tool = session.tools.get(call.name);
    return tool !== undefined && held.includes(tool.access);
  });
}
