/**
 * Who holds a run: `host:pid:nonce`. A lease expires after `leaseMs` without a write; a lease held by a
 * process of this machine that no longer exists is taken over at once (a crashed worker's run can be
 * resumed immediately, not after the lease runs out).
 */
import { randomUUID } from 'node:crypto';
import { hostname } from 'node:os';

export function newLeaseOwner(): string {
  return `${hostname()}:${process.pid}:${randomUUID().slice(0, 8)}`;
}

/** The owner to take over from when it is a dead process of this machine, else undefined. */
export function deadOwner(owner: string | null): string | undefined {
  if (owner === null) return undefined;
  const [host, pidText] = owner.split(':');
  const pid = Number(pidText);
  if (host !== hostname() || !Number.isInteger(pid) || pid <= 0 || pid === process.pid) return undefined;
  try {
    process.kill(pid, 0);
    return undefined;
  } catch (error) {
    // EPERM: it exists under another user, so it is alive.
    return (error as NodeJS.ErrnoException).code === 'ESRCH' ? owner : undefined;
  }
}
