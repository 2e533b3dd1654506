/** Errors of the distributed mode that only DBOS workers and clients throw. */
import { LoopstateError } from '../../contracts/errors.js';

/** The codes of a `DbosWorkerError`. */
export type DbosWorkerErrorCode = 'no_live_worker' | 'worker_version_mismatch';

/**
 * No worker that could take a request is alive: none at all (`no_live_worker`), or none of the
 * client's version while others are (`worker_version_mismatch`). `liveVersions` are the versions
 * of the workers that are alive.
 * @example
 * try { await client.approve(runId, approvals) } catch (error) { if (error instanceof DbosWorkerError && error.code === 'no_live_worker') page('start a worker') }
 */
export class DbosWorkerError extends LoopstateError {
  declare readonly code: DbosWorkerErrorCode;
  readonly applicationVersion: string;
  readonly liveVersions: readonly string[];
  constructor({
    code,
    message,
    applicationVersion,
    liveVersions,
  }: {
    code: DbosWorkerErrorCode;
    message: string;
    applicationVersion: string;
    liveVersions: readonly string[];
  }) {
    super({ code, message });
    this.applicationVersion = applicationVersion;
    this.liveVersions = liveVersions;
  }
}
