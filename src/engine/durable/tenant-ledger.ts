/**
 * Tenant budgets: a ledger per tenant in the store. A run holds its share when it starts — per capped
 * dimension, the lesser of its own limit and what the tenant has left (its budget minus what finished
 * runs spent and unfinished runs hold) — and that share becomes the run's limit, so its budget gate
 * sees the tenant's remaining budget. When the run finishes, its usage is charged and the rest of its
 * hold is given back. Holds never add up past the tenant's budget, so concurrent runs overspend it by
 * at most what each run's budget gate lets one call overrun: the calls in flight.
 */
import type { LoopLimits, Usage } from '../../../machines/types.js';
import type { TenantBudget } from '../config/config.js';
import type { Store } from '../../contracts/store.js';
import { StoreConflictError } from '../store/store-conflict-error.js';
import { hasId } from './id-record.js';
import { formatUsd } from '../pricing/pricing.js';
import { RECORD_SCHEMA_VERSION } from './records.js';
import { decodeLedgerRecord, encodeRecord } from './record-codec.js';
import { type LedgerRecord, type RunRecord, type TenantHold } from './run-record.js';

type Dimension = 'costUsd' | 'inputTokens' | 'outputTokens';
const DIMENSIONS: readonly { dimension: Dimension; cap: keyof Omit<TenantBudget, 'id'>; limit: keyof LoopLimits }[] = [
  { dimension: 'costUsd', cap: 'maxCostUsd', limit: 'maxCostUsd' },
  { dimension: 'inputTokens', cap: 'maxInputTokens', limit: 'maxInputTokens' },
  { dimension: 'outputTokens', cap: 'maxOutputTokens', limit: 'maxOutputTokens' },
];

/** Compare-and-set attempts before giving up on a ledger under heavy contention. */
const MAX_ATTEMPTS = 100;

/** Read-modify-write of a tenant's ledger, retried while other runs of the tenant write it. */
async function updateLedger<Result>(
  store: Store,
  tenantId: string,
  change: (ledger: LedgerRecord) => { ledger: LedgerRecord | null; result: Result },
): Promise<Result> {
  for (let attempt = 0; attempt < MAX_ATTEMPTS; attempt++) {
    const row = await store.readLedger(tenantId);
    const ledger =
      row === null
        ? {
            schemaVersion: RECORD_SCHEMA_VERSION,
            kind: 'ledger' as const,
            tenantId,
            spent: { costUsd: 0, inputTokens: 0, outputTokens: 0 },
            holds: Object.create(null) as LedgerRecord['holds'],
          }
        : decodeLedgerRecord(row.body, tenantId);
    const { ledger: next, result } = change(ledger);
    if (next === null || (await store.writeLedger(tenantId, encodeRecord(next), row?.version ?? null))) return result;
  }
  throw new StoreConflictError({
    runId: `tenant:${tenantId}`,
    seq: null,
    message: `the ledger of tenant ${tenantId} kept changing under ${MAX_ATTEMPTS} attempts to update it`,
  });
}

function left(tenant: TenantBudget, ledger: LedgerRecord, exceptRunId: string): TenantHold {
  const result: TenantHold = { costUsd: null, inputTokens: null, outputTokens: null };
  for (const { dimension, cap } of DIMENSIONS) {
    const budget = tenant[cap];
    if (budget === undefined) continue;
    let held = 0;
    for (const [runId, hold] of Object.entries(ledger.holds)) if (runId !== exceptRunId) held += hold[dimension] ?? 0;
    result[dimension] = Math.max(0, budget - ledger.spent[dimension] - held);
  }
  return result;
}

/** The run's hold: taken once, the same one on every later call (a resume after a crash reuses it). */
export async function holdShare(
  store: Store,
  tenant: TenantBudget,
  runId: string,
  limits: LoopLimits,
): Promise<NonNullable<RunRecord['tenantHold']>> {
  return updateLedger(store, tenant.id, (ledger) => {
    const tenantLeft = left(tenant, ledger, runId);
    const existing = hasId(ledger.holds, runId) ? ledger.holds[runId] : undefined;
    if (existing !== undefined) return { ledger: null, result: { tenantId: tenant.id, hold: existing, tenantLeft } };
    const hold: TenantHold = { costUsd: null, inputTokens: null, outputTokens: null };
    for (const { dimension, limit } of DIMENSIONS) {
      const available = tenantLeft[dimension];
      if (available !== null) hold[dimension] = Math.min(limits[limit] as number, available);
    }
    // Own entries, not assignments: a run id may be `__proto__`.
    return {
      ledger: { ...ledger, holds: { ...ledger.holds, [runId]: hold } },
      result: { tenantId: tenant.id, hold, tenantLeft },
    };
  });
}

/** Charges a finished run's usage and gives back the rest of its hold; a second call changes nothing. */
export async function settleShare(store: Store, tenantId: string, runId: string, usage: Usage): Promise<void> {
  await updateLedger(store, tenantId, (ledger) => {
    if (!hasId(ledger.holds, runId)) return { ledger: null, result: undefined };
    const holds = { ...ledger.holds };
    delete holds[runId];
    const spent = {
      costUsd: ledger.spent.costUsd + usage.costUsd,
      inputTokens: ledger.spent.inputTokens + usage.inputTokens,
      outputTokens: ledger.spent.outputTokens + usage.outputTokens,
    };
    return { ledger: { ...ledger, spent, holds }, result: undefined };
  });
}

/** The run's limits with its hold in place of its own limit wherever the hold is lower. */
export function heldLimits(limits: LoopLimits, share: RunRecord['tenantHold']): LoopLimits {
  if (share === null) return limits;
  const result = { ...limits };
  for (const { dimension, limit } of DIMENSIONS) {
    const held = share.hold[dimension];
    if (held !== null && held < (limits[limit] as number)) (result[limit] as number) = held;
  }
  return result;
}

/** When the tenant's share, not the run's own limit, stopped the run: say so, and what to raise. */
export function tenantStopNote(limits: LoopLimits, share: RunRecord['tenantHold']): string | null {
  if (share === null) return null;
  const bounded = DIMENSIONS.filter(
    ({ dimension, limit }) =>
      share.hold[dimension] !== null && (share.hold[dimension] as number) < (limits[limit] as number),
  );
  if (bounded.length === 0) return null;
  const parts = bounded.map(
    ({ dimension, cap }) =>
      `${cap} ${dimension === 'costUsd' ? formatUsd(share.hold[dimension] as number) : share.hold[dimension]} left`,
  );
  return `this run's share of tenant ${share.tenantId}'s budget was what the tenant had left when it started (${parts.join(', ')}); raise tenant.${bounded[0]?.cap} or let the tenant's other runs finish`;
}

/**
 * A tenant's ledger as it stands: what its finished runs spent and what its unfinished runs hold.
 * @example
 * const ledger = await readTenantLedger(store, 'acme'); // { spent: { costUsd, inputTokens, outputTokens }, holds: { [runId]: ... } }
 */
export async function readTenantLedger(store: Store, tenantId: string): Promise<LedgerRecord | null> {
  const row = await store.readLedger(tenantId);
  return row === null ? null : decodeLedgerRecord(row.body, tenantId);
}
