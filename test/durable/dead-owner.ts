import type { Store } from 'loopstate';

/**
 * In-process stand-in for a dead owner: a run whose promise hangs forever is as good as crashed once
 * its lease is freed (a real crash frees it through the dead-pid check or the lease's expiry).
 */
export async function freeLease(store: Store, runId: string): Promise<void> {
  const row = await store.readRun(runId);
  if (row?.leaseOwner) await store.releaseLease(runId, row.leaseOwner);
}
