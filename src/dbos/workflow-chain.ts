/**
 * A distributed run is a chain of workflows: its first leg (id = run id), successors of long legs
 * (`<id>/part/<n>`), a waiter while it stops for approval (`<leg>/wait`, which receives the decisions
 * through `DBOS.recv`), the leg the decisions continue it in (`<leg>/wait/approved/<key>`), and legs
 * enqueued by hand (`<run>/resume/<key>`). Workers and clients follow the chain the same way, through
 * this module.
 */
import { hash } from 'node:crypto';
import type { WorkflowStatus } from '@dbos-inc/dbos-sdk';
import { canonicalJson } from '../progress/index.js';
import type { ApprovalInput } from '../durable/durable-runs.js';
import type { RunResult } from '../runtime/run-result.js';

/** The DBOS workflow name of a run's leg. */
export const RUN_WORKFLOW_NAME = 'loopstate.run';
/** The DBOS workflow name of a stopped run's wait for approval. */
export const WAIT_WORKFLOW_NAME = 'loopstate.wait-for-approval';
/** The topic decisions are sent on (`DBOS.send` to the waiter). */
export const APPROVALS_TOPIC = 'loopstate.approvals';

/** What a leg's workflow returns. */
export type LegOutput =
  | { kind: 'stopped'; result: RunResult; waitingIn?: string }
  | { kind: 'continued'; workflowId: string };

/** What a waiter returns: the leg it continued the run in, or why it stopped waiting. */
export type WaitOutput = { kind: 'continued'; workflowId: string } | { kind: 'ended'; reason: 'expired' | 'not_waiting' };

/** The message a waiter receives. */
export interface ApprovalMessage {
  approvals: Record<string, ApprovalInput>;
  key: string;
}

export const successorId = (workflowId: string, part: number): string => `${workflowId.replace(/\/part\/\d+$/, '')}/part/${part}`;
export const waiterId = (legId: string): string => `${legId}/wait`;
export const approvedLegId = (waiter: string, key: string): string => `${waiter}/approved/${key}`;

/** The key that makes one person's decisions continue a run once: given, or the decisions' hash. */
export function decisionsKey(approvals: unknown, idempotencyKey: string | undefined): string {
  return idempotencyKey ?? hash('sha256', canonicalJson(approvals ?? null), 'hex').slice(0, 16);
}

export function isApprovalMessage(value: unknown): value is ApprovalMessage {
  const message = value as Partial<ApprovalMessage> | null;
  return typeof message === 'object' && message !== null && typeof message.key === 'string' && typeof message.approvals === 'object' && message.approvals !== null;
}

/** How the chain is read: a workflow's output (waiting for it), and its status now. */
export interface ChainReader {
  output(workflowId: string): Promise<unknown>;
  status(workflowId: string): Promise<WorkflowStatus['status'] | undefined>;
}

/** The run's latest stop, from any workflow of its chain: successors and decided approvals are followed. */
export async function latestStop(reader: ChainReader, workflowId: string): Promise<RunResult> {
  let id = workflowId;
  for (;;) {
    const output = (await reader.output(id)) as LegOutput;
    if (output.kind === 'continued') {
      id = output.workflowId;
      continue;
    }
    if (output.waitingIn !== undefined && (await reader.status(output.waitingIn)) === 'SUCCESS') {
      const waited = (await reader.output(output.waitingIn)) as WaitOutput;
      if (waited.kind === 'continued') {
        id = waited.workflowId;
        continue;
      }
    }
    return output.result;
  }
}

/** What `approve` needs of DBOS (the launched worker's or a client's). */
export interface ApprovalPort extends ChainReader {
  /** The run's waiters that wait now. */
  waiting(runId: string): Promise<string[]>;
  send(workflowId: string, message: ApprovalMessage, idempotencyKey: string): Promise<void>;
  enqueueResume(runId: string, approvals: Record<string, ApprovalInput>, idempotencyKey: string): Promise<{ runId: string; workflowId: string }>;
}

/**
 * Hands a person's decisions to the run: to its waiter if one waits (`DBOS.send`; the waiter continues
 * the run in a new leg and ends), else in a new leg on the queue. Waits for the waiter to take them, up
 * to `takeTimeoutMs` (a waiter on a dead worker takes them once a reaper recovers it). Either way the
 * decisions are applied once: the journal refuses a second application.
 */
export async function handOverDecisions(port: ApprovalPort, runId: string, approvals: Record<string, ApprovalInput>, options: { idempotencyKey?: string; takeTimeoutMs: number; pollMs: number }): Promise<{ runId: string; workflowId: string }> {
  const key = decisionsKey(approvals, options.idempotencyKey);
  const [waiter] = await port.waiting(runId);
  if (waiter === undefined) return port.enqueueResume(runId, approvals, key);
  await port.send(waiter, { approvals, key }, key);
  const until = Date.now() + options.takeTimeoutMs;
  for (;;) {
    const status = await port.status(waiter);
    if (status === 'SUCCESS') {
      const waited = (await port.output(waiter)) as WaitOutput;
      if (waited.kind === 'continued') return { runId, workflowId: waited.workflowId };
      // The wait ended as the decisions arrived (it expired): a new leg takes them.
      return port.enqueueResume(runId, approvals, key);
    }
    if (status !== 'PENDING' && status !== 'ENQUEUED') return port.enqueueResume(runId, approvals, key);
    if (Date.now() >= until) return { runId, workflowId: approvedLegId(waiter, key) };
    await new Promise((resolve) => setTimeout(resolve, options.pollMs));
  }
}

/** The run's own workflows among a listing (`listWorkflows` matches ids by prefix: `run-1` would match `run-10/...`). */
export function ofRun(runId: string, workflows: readonly WorkflowStatus[]): WorkflowStatus[] {
  return workflows.filter((workflow) => workflow.workflowID === runId || workflow.workflowID.startsWith(`${runId}/`));
}
