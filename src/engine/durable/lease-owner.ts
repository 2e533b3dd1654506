/**
 * Who holds a run: `host:pid:process.nonce`. A lease expires after `leaseMs` without a write; a lease held by a
 * process of this machine that no longer exists is taken over at once (a crashed worker's run can be
 * resumed immediately, not after the lease runs out), and so is one this process could not free when
 * its drive ended (the store was down): it must not lock its own process out once the store is back.
 * Host and process come from a probe of the runtime: where either is unknown (a browser, a runtime without
 * Node's os module and no HOSTNAME) nobody is judged dead, and a lease simply runs out.
 */
import { hostProcess, nodeBuiltin } from '../host-runtime.js';

/** This machine's name, or null when the runtime cannot tell it (then no owner is ever judged dead by it). */
const thisHost: string | null = (() => {
  try {
    const name = nodeBuiltin<{ hostname(): string }>('node:os')?.hostname() ?? hostProcess()?.env?.HOSTNAME;
    return name === undefined || name === '' ? null : name;
  } catch {
    return null;
  }
})();
/** This process's id, 0 without one (a browser tab, a worker). */
const thisPid: number = (() => {
  const pid = hostProcess()?.pid;
  return typeof pid === 'number' && Number.isInteger(pid) && pid > 0 ? pid : 0;
})();

/**
 * By run: the owner whose drive ended here without freeing its lease. Per copy of this module, so a
 * worker thread never takes over a drive of another thread of the same process.
 */
const unreleased = new Map<string, string>();

/** Tells this process apart from an earlier one of the same pid on the same host. */
const thisProcessTag = globalThis.crypto.randomUUID().slice(0, 8);

export function newLeaseOwner(): string {
  return `${leaseOwnerPrefix()}${globalThis.crypto.randomUUID().slice(0, 8)}`;
}

/**
 * What every lease owner of this process (this copy of the module) starts with: a worker hands it to
 * the reapers, so the one that finds the worker dead frees its leases at once.
 * @example
 * leaseOwnerPrefix(); // 'web-1:4242:1a2b3c4d.'
 */
export function leaseOwnerPrefix(): string {
  return `${thisHost ?? 'unknown-host'}:${thisPid}:${thisProcessTag}.`;
}

/** The drive of `owner` is over, and its lease could not be freed (or was freed: `owner` null). */
export function noteLeaseLeft(runId: string, owner: string | null): void {
  if (owner === null) unreleased.delete(runId);
  else unreleased.set(runId, owner);
}

/**
 * Who holds a run's lease, for a `run_busy` message: the process and host its owner id names, the id itself,
 * and until when the lease holds; said plainly when nobody holds it any more.
 * @example
 * describeLeaseHolder('web-1:4242:1a2b3c4d', Date.parse('2026-01-01T00:00:30Z'), Date.parse('2026-01-01T00:00:00Z'))
 * // 'held by process 4242 on web-1 (lease owner "web-1:4242:1a2b3c4d") until 2026-01-01T00:00:30.000Z, 30 s from now'
 */
export function describeLeaseHolder(owner: string | null, leaseUntil: number, now: number): string {
  if (owner === null) return 'its holder released the lease while this call tried to take it';
  // host:pid:nonce, split from the right: the host is whatever comes before.
  const match = /^(.*):(\d+):([^:]+)$/.exec(owner);
  const who = match === null ? `lease owner "${owner}"` : `process ${match[2]} on ${match[1]} (lease owner "${owner}")`;
  if (!Number.isFinite(leaseUntil) || leaseUntil <= 0) return `held by ${who}`;
  const seconds = Math.round((leaseUntil - now) / 1000);
  return `held by ${who} until ${new Date(leaseUntil).toISOString()}, ${seconds >= 0 ? `${seconds} s from now` : `${-seconds} s ago`}`;
}

/** The owner to take over from when its drive is known to be over (a dead process of this machine, or a drive of this one that ended), else undefined. */
export function deadOwner(owner: string | null): string | undefined {
  if (owner === null) return undefined;
  // Owner ids carry a random nonce: one this module left behind is this process's own, whatever the host.
  if ([...unreleased.values()].includes(owner)) return owner;
  const [host, pidText] = owner.split(':');
  const pid = Number(pidText);
  const runtime = hostProcess();
  if (
    thisHost === null ||
    host !== thisHost ||
    !Number.isInteger(pid) ||
    pid <= 0 ||
    pid === thisPid ||
    typeof runtime?.kill !== 'function'
  )
    return undefined;
  try {
    runtime.kill(pid, 0);
    return undefined;
  } catch (error) {
    // EPERM: it exists under another user, so it is alive.
    return (error as { code?: unknown }).code === 'ESRCH' ? owner : undefined;
  }
}
