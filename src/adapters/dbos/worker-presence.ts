/**
 * Which workers are alive, from their heartbeats in the store: a client asks before it enqueues or
 * hands on decisions, so a request no live worker would take is an error now, not a run left
 * ENQUEUED with no word on either side.
 */
import type { PostgresStore } from '../postgres/index.js';
import { DbosWorkerError } from './dbos-errors.js';

/** Fresh enough to skip the read: one query a second at most on a busy client. */
const TRUST_MS = 1_000;

/**
 * A check of the workers of `applicationVersion`: it throws `worker_version_mismatch` when workers are
 * alive and none runs this version, and, with `needLive`, `no_live_worker` when none is alive at all.
 * A store no worker ever heartbeated into says nothing (the workers may use another), so it passes.
 */
export function workerPresence(
  store: Pick<PostgresStore, 'liveWorkers'>,
  applicationVersion: string,
  deadAfterMs: number,
): (what: string, needLive: boolean) => Promise<void> {
  let trustedUntil = 0;
  return async (what, needLive) => {
    // Only an enqueue trusts a recent answer: an approval asks now, its worker may have just gone.
    if (!needLive && Date.now() < trustedUntil) return;
    const now = Date.now();
    const rows = await store.liveWorkers(0);
    if (rows.length === 0) return;
    const live = rows.filter((row) => row.heartbeatAt >= now - deadAfterMs);
    // A worker of an older loopstate does not say its version: it may be ours.
    if (live.some((row) => row.applicationVersion === applicationVersion || row.applicationVersion === null)) {
      trustedUntil = now + TRUST_MS;
      return;
    }
    const liveVersions = [...new Set(live.map((row) => row.applicationVersion as string))].sort();
    if (live.length > 0)
      throw new DbosWorkerError({
        code: 'worker_version_mismatch',
        applicationVersion,
        liveVersions,
        message: `${what}: no live worker runs version ${applicationVersion}; the live workers (${live.map((row) => row.executorId).join(', ')}) run ${liveVersions.join(', ')}, so the run would wait on the queue for ever. Give the client the workers' version, or start workers of this one`,
      });
    if (needLive)
      throw new DbosWorkerError({
        code: 'no_live_worker',
        applicationVersion,
        liveVersions,
        message: `${what}: no worker is alive (none heartbeated in the last ${deadAfterMs} ms; known: ${rows.map((row) => row.executorId).join(', ')}), so nobody would take the decisions; nothing was sent. Start a worker of version ${applicationVersion} and try again`,
      });
  };
}
