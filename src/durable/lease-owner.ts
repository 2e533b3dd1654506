/**
 * Who holds a run: `host:pid:nonce`. A lease expires after `leaseMs` without a write; a lease held by a
 * process of this machine that no longer exists is taken over at once (a crashed worker's run can be
 * resumed immediately, not after the lease runs out), and so is one this process could not free when
 * its drive ended (the store was down): it must not lock its own process out once the store is back.
 */
import { randomUUID } from 'node:crypto';
import { hostname } from 'node:os';

/**
 * By run: the owner whose drive ended here without freeing its lease. Per copy of this module, so a
 * worker thread never takes over a drive of another thread of the same process.
 */
const unreleased = new Map<string, string>();

export function newLeaseOwner(): string {
  return `${hostname()}:${process.pid}:${randomUUID().slice(0, 8)}`;
}

/** The drive of `owner` is over, and its lease could not be freed (or was freed: `owner` null). */
export function noteLeaseLeft(runId: string, owner: string | null): void {
  if (owner === null) unreleased.delete(runId);
  else unreleased.set(runId, owner);
}

/** The owner to take over from when its drive is known to be over (a dead process of this machine, or a drive of this one that ended), else undefined. */
export function deadOwner(owner: string | null): string | undefined {
  if (owner === null) return undefined;
  const [host, pidText] = owner.split(':');
  const pid = Number(pidText);
  if (host !== hostname() || !Number.isInteger(pid) || pid <= 0) return undefined;
  if (pid === process.pid) return [...unreleased.values()].includes(owner) ? owner : undefined;
  try {
    process.kill(pid, 0);
    return undefined;
  } catch (error) {
    // EPERM: it exists under another user, so it is alive.
    return (error as NodeJS.ErrnoException).code === 'ESRCH' ? owner : undefined;
  }
}
