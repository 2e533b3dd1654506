/**
 * One leg of a distributed run: start it, or continue it, to its next stop. Entered again by DBOS's
 * recovery after a crash, so it is written to be re-entered: a run that exists is resumed (the journal
 * serves what completed), decisions recorded already are not taken twice, and a lease still held by a dead
 * worker is waited out.
 */
import { hash } from 'node:crypto';
import { refreshTools, validateRunInput, type RunInput } from '../../engine/config/config.js';
import { LoopConfigError } from '../../contracts/errors.js';
import { canonicalJson } from '../../engine/progress/index.js';
import type { ApprovalInput, DrivingOptions, DurableRuns, ReviewInput } from '../../engine/durable/durable-runs.js';
import { RunAccessError } from '../../engine/durable/durable-errors.js';
import type { RunResult } from '../../engine/runtime/run-result.js';
import { loopConfigOf, type Loop } from '../../engine/loop.js';
import { resumeLegId } from './workflow-chain.js';

/**
 * What a run's workflow is asked to do (its serialised argument); `part` counts successor workflows (1
 * for the first), `failures` the legs before it that a store error ended in a row.
 */
export type LegRequest =
  | { kind: 'run'; runId: string; input: Omit<RunInput, 'signal'>; part?: number; failures?: number }
  | {
      kind: 'resume';
      runId: string;
      approvals?: Record<string, ApprovalInput>;
      review?: ReviewInput;
      part?: number;
      failures?: number;
    };

const pause = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

/**
 * Drives one leg of `loop`'s run (`runs`: its durable runs). Like `loop.run` and `loop.resume`, a leg
 * first takes the loop's current tools (an MCP connection's list after `tools/list_changed`).
 */
export async function driveLeg(
  loop: Pick<Loop, 'config'>,
  runs: DurableRuns,
  request: LegRequest,
  driving: DrivingOptions = {},
  busyWaitMs = 60_000,
): Promise<RunResult> {
  const resolved = loopConfigOf(loop);
  if (resolved !== undefined) refreshTools(resolved, loop.config);
  const deadline = Date.now() + busyWaitMs;
  for (let attempt = 0; ; attempt++) {
    try {
      return await once(runs, request, driving);
    } catch (error) {
      // A dead worker's lease on another machine frees itself when it expires.
      if (error instanceof RunAccessError && error.code === 'run_busy' && Date.now() < deadline) {
        await pause(Math.min(1_000, 50 * 2 ** attempt));
        continue;
      }
      throw error;
    }
  }
}

async function once(runs: DurableRuns, request: LegRequest, driving: DrivingOptions): Promise<RunResult> {
  if (request.kind === 'run') {
    try {
      return await runs.run(validateRunInput({ ...request.input, runId: request.runId }), driving);
    } catch (error) {
      // Re-entered after a crash: the run was created by this leg's first attempt.
      if (error instanceof RunAccessError && error.code === 'run_exists')
        return runs.resume(request.runId, {}, driving);
      throw error;
    }
  }
  // Re-entered after a crash, the first attempt having recorded the decisions: resume takes the very
  // decisions sent again as a retry and goes on as the run does; other decisions on those calls it refuses.
  return runs.resume(
    request.runId,
    {
      ...(request.approvals === undefined ? {} : { approvals: request.approvals }),
      ...(request.review === undefined ? {} : { review: request.review }),
    },
    driving,
  );
}

/** A new run's workflow: its id is the run id, so enqueuing a run twice starts it once. */
/** Workflow ids are paths of the run's id (`<run>/part/2`, `<run>/wait`): a `/` in an id would make two runs' chains meet. */
function checkIdPart(value: unknown, path: string): void {
  if (typeof value !== 'string' || value === '' || value.includes('/')) {
    throw new LoopConfigError({
      scope: 'run_input',
      issues: [
        {
          path,
          message: 'expected a non-empty string without "/" (it names DBOS workflows: <runId>/part/2, <runId>/wait, …)',
        },
      ],
    });
  }
}

export function runRequest(input: RunInput & { runId: string }): { workflowId: string; request: LegRequest } {
  checkIdPart(input?.runId, 'runId');
  const { signal: _signal, ...rest } = input;
  return {
    workflowId: input.runId,
    request: { kind: 'run', runId: input.runId, input: JSON.parse(JSON.stringify(rest)) as Omit<RunInput, 'signal'> },
  };
}

/** A continuation's workflow: one per (run, idempotency key), the key defaulting to the decisions' hash. */
export function resumeRequest(
  runId: string,
  options: { approvals?: Readonly<Record<string, ApprovalInput>>; review?: ReviewInput; idempotencyKey?: string } = {},
): { workflowId: string; request: LegRequest } {
  checkIdPart(runId, 'runId');
  if (options.idempotencyKey !== undefined) checkIdPart(options.idempotencyKey, 'idempotencyKey');
  // Approvals alone keep the key they always had; a review decision is keyed apart from them.
  const decided =
    options.review === undefined
      ? (options.approvals ?? null)
      : { approvals: options.approvals ?? null, review: options.review };
  const key = options.idempotencyKey ?? hash('sha256', canonicalJson(decided), 'hex').slice(0, 16);
  return {
    workflowId: resumeLegId(runId, key),
    request: {
      kind: 'resume',
      runId,
      ...(options.approvals === undefined ? {} : { approvals: { ...options.approvals } }),
      ...(options.review === undefined ? {} : { review: { ...options.review } }),
    },
  };
}
