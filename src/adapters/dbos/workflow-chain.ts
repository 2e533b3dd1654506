/**
 * A distributed run is a chain of workflows: its first leg (id = run id), successors of long legs
 * (`<id>/part/<n>`), a waiter while it stops for approval (`<leg>/wait`, which receives the decisions
 * through `DBOS.recv`), the leg the decisions continue it in (`<leg>/wait/approved/<key>`), and legs
 * enqueued by hand (`<run>/resume/<key>`). Workers and clients follow the chain the same way, through
 * this module.
 */
import { hash } from 'node:crypto';
import type { GetWorkflowsInput, WorkflowStatus } from '@dbos-inc/dbos-sdk';
import { canonicalJson } from '../../engine/progress/index.js';
import { ApprovalError, type ApprovalErrorCode } from '../../engine/durable/durable-errors.js';
import { LoopConfigError, LoopstateError } from '../../contracts/errors.js';
import { isLoopstateErrorCode } from '../../contracts/error-codes.js';
import type { ApprovalInput } from '../../engine/durable/durable-runs.js';
import type { RunResult } from '../../engine/runtime/run-result.js';
import { RUN_STEP_NAME } from './step-log.js';

/** The DBOS workflow name of a run's leg. */
export const RUN_WORKFLOW_NAME = 'loopstate.run';
/** The DBOS workflow name of a stopped run's wait for approval. */
export const WAIT_WORKFLOW_NAME = 'loopstate.wait-for-approval';
/** The topic decisions are sent on (`DBOS.send` to the waiter). */
export const APPROVALS_TOPIC = 'loopstate.approvals';

/**
 * What a leg's workflow returns: the run's stop; the successor that continues it; or the decisions it
 * was given refused (the run still waits, at `result`, in a new waiter).
 */
export type LegOutput =
  | { kind: 'stopped'; result: RunResult; waitingIn?: string }
  | { kind: 'refused'; code: string; message: string; result: RunResult | null; waitingIn?: string }
  | { kind: 'continued'; workflowId: string };

/** What a waiter returns: the leg it continued the run in, or why it stopped waiting. */
export type WaitOutput =
  { kind: 'continued'; workflowId: string } | { kind: 'ended'; reason: 'expired' | 'not_waiting' };

/** The message a waiter receives. */
export interface ApprovalMessage {
  approvals: Record<string, ApprovalInput>;
  key: string;
}

export const successorId = (workflowId: string, part: number): string =>
  `${workflowId.replace(/\/part\/\d+$/, '')}/part/${part}`;
export const waiterId = (legId: string): string => `${legId}/wait`;
export const approvedLegId = (waiter: string, key: string): string => `${waiter}/approved/${key}`;
/** The leg `enqueueResume` (or `approve` with no waiter) starts for decisions of this key. */
export const resumeLegId = (runId: string, key: string): string => `${runId}/resume/${key}`;

/** The key that makes one person's decisions continue a run once: given, or the decisions' hash. */
export function decisionsKey(approvals: unknown, idempotencyKey: string | undefined): string {
  return idempotencyKey ?? hash('sha256', canonicalJson(approvals ?? null), 'hex').slice(0, 16);
}

export function isApprovalMessage(value: unknown): value is ApprovalMessage {
  const message = value as Partial<ApprovalMessage> | null;
  return (
    typeof message === 'object' &&
    message !== null &&
    typeof message.key === 'string' &&
    typeof message.approvals === 'object' &&
    message.approvals !== null
  );
}

/** How the chain is read: a workflow's output (waiting for it), and its status now. */
export interface ChainReader {
  output(workflowId: string): Promise<unknown>;
  status(workflowId: string): Promise<WorkflowStatus['status'] | undefined>;
}

/** The run's latest stop, from any workflow of its chain: successors and decided approvals are followed. */
export async function latestStop(reader: ChainReader, workflowId: string): Promise<RunResult> {
  let id = workflowId;
  let last: RunResult | null = null;
  for (;;) {
    const output = (await reader.output(id)) as LegOutput;
    if (output.kind === 'continued') {
      id = output.workflowId;
      continue;
    }
    // A refused leg changed nothing: the stop before it stands (or the one it read back from the store).
    last = output.kind === 'stopped' ? output.result : (output.result ?? last);
    if (output.waitingIn !== undefined && (await reader.status(output.waitingIn)) === 'SUCCESS') {
      const waited = (await reader.output(output.waitingIn)) as WaitOutput;
      if (waited.kind === 'continued') {
        id = waited.workflowId;
        continue;
      }
    }
    if (last === null)
      throw new Error(
        `workflow ${id} refused its decisions (${output.kind === 'refused' ? output.message : ''}) and no stop of the run is known to it`,
      );
    return last;
  }
}

/**
 * The run's latest stop as `result` reports it: the chain's, then, while that is a stop for approval,
 * whatever leg of the run is queued or running now (a continuation enqueued outside the chain) is
 * waited for; with no such leg, the store's latest stop when there is a store.
 */
export async function followRun(
  reader: ChainReader & { activeLegs(runId: string): Promise<string[]> },
  workflowId: string,
  stored?: (runId: string) => Promise<RunResult | null>,
): Promise<RunResult> {
  let stop: RunResult;
  try {
    stop = await latestStop(reader, workflowId);
  } catch (error) {
    // A leg of the chain failed (a lost lease, a store error): the run may have gone on elsewhere, and
    // the store knows its latest stop. Run ids hold no "/", so the chain's first segment is the run.
    const recorded = stored === undefined ? null : await stored(workflowId.split('/')[0] ?? workflowId);
    if (recorded === null) throw error;
    return recorded;
  }
  const seen = new Set<string>();
  for (;;) {
    if (stop.stopReason !== 'needs_human') return stop;
    const leg = (await reader.activeLegs(stop.runId)).find((id) => !seen.has(id));
    if (leg === undefined) return (stored === undefined ? null : await stored(stop.runId)) ?? stop;
    seen.add(leg);
    stop = await latestStop(reader, leg);
  }
}

/** What `approve` needs of DBOS (the launched worker's or a client's). */
export interface ApprovalPort extends ChainReader {
  /** The run's waiters that wait now. */
  waiting(runId: string): Promise<string[]>;
  /** The leg that decisions of this key continued the run in already, if one was started. */
  continuation(runId: string, key: string): Promise<string | undefined>;
  /** A workflow's input (its request), when the port can read it. */
  input?(workflowId: string): Promise<unknown>;
  /** The verdict a leg given decisions recorded on them, once it has (see `StepLog.verdict`). */
  verdict(workflowId: string): Promise<{ accepted: boolean; code?: string; message?: string } | undefined>;
  send(workflowId: string, message: ApprovalMessage, idempotencyKey: string): Promise<void>;
  enqueueResume(
    runId: string,
    approvals: Record<string, ApprovalInput>,
    idempotencyKey: string,
  ): Promise<{ runId: string; workflowId: string }>;
}

/**
 * Hands a person's decisions to the run: to its waiter if one waits (`DBOS.send`; the waiter continues
 * the run in a new leg and ends), else in a new leg on the queue. Then waits, up to `takeTimeoutMs`, for
 * that leg's verdict on them, and throws it as an `ApprovalError` when they do not fit (a waiter on a
 * dead worker takes them once a reaper recovers it; past the timeout the leg's id is returned
 * unjudged). Either way the decisions are applied once: the journal refuses a second application.
 */
export async function handOverDecisions(
  port: ApprovalPort,
  runId: string,
  approvals: Record<string, ApprovalInput>,
  options: { idempotencyKey?: string; takeTimeoutMs: number; pollMs: number },
): Promise<{ runId: string; workflowId: string }> {
  if (runId.includes('/') || options.idempotencyKey?.includes('/'))
    throw new LoopConfigError({
      scope: 'run_input',
      issues: [
        {
          path: runId.includes('/') ? 'runId' : 'idempotencyKey',
          message: 'expected a string without "/" (it names DBOS workflows)',
        },
      ],
    });
  const key = decisionsKey(approvals, options.idempotencyKey);
  const until = Date.now() + options.takeTimeoutMs;
  const pause = () => new Promise((resolve) => setTimeout(resolve, options.pollMs));
  const judged = async (handed: { runId: string; workflowId: string }) => {
    for (;;) {
      const verdict = await port.verdict(handed.workflowId);
      if (verdict?.accepted === false)
        throw refusal(runId, verdict.code, verdict.message ?? `run ${runId} refused the decisions`);
      if (verdict !== undefined || Date.now() >= until) return handed;
      const status = await port.status(handed.workflowId);
      if (status !== undefined && status !== 'PENDING' && status !== 'ENQUEUED') return handed;
      await pause();
    }
  };
  // Sent again (a retry, a double click): the leg they continued the run in answers, not a new one.
  const earlier = await port.continuation(runId, key);
  if (earlier !== undefined) return judged({ runId, workflowId: earlier });
  const [waiter] = await port.waiting(runId);
  if (waiter === undefined) return judged(await port.enqueueResume(runId, approvals, key));
  await port.send(waiter, { approvals, key }, key);
  for (;;) {
    const status = await port.status(waiter);
    if (status === 'SUCCESS') {
      const waited = (await port.output(waiter)) as WaitOutput;
      if (waited.kind === 'continued') {
        // Ours, or the very same decisions sent with another key: the leg that took them answers.
        if (
          waited.workflowId === approvedLegId(waiter, key) ||
          (await sameDecisions(port, waited.workflowId, approvals))
        )
          return judged({ runId, workflowId: waited.workflowId });
        throw new ApprovalError({
          code: 'approval_already_decided',
          runId,
          message: `run ${runId} was continued with other decisions first (${waited.workflowId}); these were not taken`,
        });
      }
      // The wait ended as the decisions arrived (it expired): a new leg takes them.
      return judged(await port.enqueueResume(runId, approvals, key));
    }
    if (status !== 'PENDING' && status !== 'ENQUEUED') return judged(await port.enqueueResume(runId, approvals, key));
    if (Date.now() >= until) return { runId, workflowId: approvedLegId(waiter, key) };
    await pause();
  }
}

/** Whether the leg a waiter started was given these very decisions (another key, the same request). */
async function sameDecisions(
  port: ApprovalPort,
  legId: string,
  approvals: Record<string, ApprovalInput>,
): Promise<boolean> {
  const input = await port.input?.(legId);
  const given = (input as { approvals?: unknown } | undefined)?.approvals;
  return given !== undefined && canonicalJson(given) === canonicalJson(approvals);
}

const APPROVAL_CODES: ReadonlySet<string> = new Set<ApprovalErrorCode>([
  'approval_unknown_call',
  'approval_already_decided',
  'approval_expired',
  'approval_arguments_changed',
  'approvals_incomplete',
  'run_not_waiting',
]);

/** A leg's refusal as the error `loop.resume` would have thrown: an `ApprovalError`, else (a bad decision's shape, an unknown run) a `LoopstateError` with its code. */
function refusal(runId: string, code: string | undefined, message: string): Error {
  if (code !== undefined && APPROVAL_CODES.has(code))
    return new ApprovalError({ code: code as ApprovalErrorCode, runId, message });
  return new LoopstateError({ code: isLoopstateErrorCode(code) ? code : 'invalid_config', message });
}

/** The verdict among a leg's recorded steps (`listWorkflowSteps`), if it has recorded one. */
export function verdictAmong(
  steps: readonly { name: string; output: unknown }[] | undefined,
): { accepted: boolean; code?: string; message?: string } | undefined {
  const step = steps?.find(
    (recorded) =>
      recorded.name === RUN_STEP_NAME && (recorded.output as { kind?: unknown } | null)?.kind === 'decisions',
  );
  return step === undefined ? undefined : (step.output as { accepted: boolean; code?: string; message?: string });
}

/** The part of DBOS a port reads through: the launched `DBOS` or a `DBOSClient`, which name these alike. */
export interface DbosReads {
  output(workflowId: string): Promise<unknown>;
  status(workflowId: string): Promise<Pick<WorkflowStatus, 'status' | 'input'> | null | undefined>;
  listWorkflows(input: GetWorkflowsInput): Promise<WorkflowStatus[]>;
  listWorkflowSteps(workflowId: string): Promise<readonly { name: string; output: unknown }[] | undefined>;
  send(workflowId: string, message: ApprovalMessage, topic: string, idempotencyKey: string): Promise<void>;
}

/** The chain's port over DBOS; `enqueueResume` starts a new leg as the worker or client does. */
export function chainPort(
  dbos: DbosReads,
  enqueueResume: ApprovalPort['enqueueResume'],
): ApprovalPort & { activeLegs(runId: string): Promise<string[]> } {
  const ids = async (runId: string, workflowName: string, status: GetWorkflowsInput['status']) =>
    ofRun(runId, await dbos.listWorkflows({ workflow_id_prefix: runId, workflowName, status })).map(
      (workflow) => workflow.workflowID,
    );
  return {
    output: (workflowId) => dbos.output(workflowId),
    status: async (workflowId) => (await dbos.status(workflowId))?.status,
    input: async (workflowId) => (await dbos.status(workflowId))?.input?.[0],
    waiting: (runId) => ids(runId, WAIT_WORKFLOW_NAME, 'PENDING'),
    continuation: async (runId, key) => {
      const enqueued = resumeLegId(runId, key);
      if ((await dbos.status(enqueued)) != null) return enqueued;
      // The latest waiter first: decisions of one key continue one stop of the run.
      const waiters = await ids(runId, WAIT_WORKFLOW_NAME, undefined);
      for (const waiter of waiters.reverse()) {
        const leg = approvedLegId(waiter, key);
        if ((await dbos.status(leg)) != null) return leg;
      }
      return undefined;
    },
    activeLegs: (runId) => ids(runId, RUN_WORKFLOW_NAME, ['PENDING', 'ENQUEUED']),
    verdict: async (workflowId) => verdictAmong(await dbos.listWorkflowSteps(workflowId)),
    send: (workflowId, message, idempotencyKey) => dbos.send(workflowId, message, APPROVALS_TOPIC, idempotencyKey),
    enqueueResume,
  };
}

/** The run's own workflows among a listing (`listWorkflows` matches ids by prefix: `run-1` would match `run-10/...`). */
export function ofRun(runId: string, workflows: readonly WorkflowStatus[]): WorkflowStatus[] {
  return workflows.filter((workflow) => workflow.workflowID === runId || workflow.workflowID.startsWith(`${runId}/`));
}
