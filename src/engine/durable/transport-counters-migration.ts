/**
 * Machine snapshots written before transport attempts were counted per call hold the task's transport
 * retries (`task.transportRetries`) and limits without `maxTransportAttempts` / `maxTransportRetries`. Read
 * back, they are given the counters and limits of this version, as the run had them in effect:
 * - `maxTransportAttempts` from `maxRetries` (`maxRetries + 1`, which is what per-task retries allowed a
 *   single call), `maxTransportRetries` switched off (the default);
 * - the task's retries become the run's total so far, and the failures in a row of the call in hand when the
 *   snapshot was taken while that call was being retried (backing off, or about to resend); 0 otherwise.
 */
import { DEFAULT_LIMITS } from '../constants.js';

type Loose = Record<string, unknown>;

const isRecord = (value: unknown): value is Loose =>
  typeof value === 'object' && value !== null && !Array.isArray(value);

/** True when the snapshot rests mid-retry: in the backoff, or deciding with a transport retry's resend pending. */
function isRetryingCall(machine: Loose, context: Loose): boolean {
  const value = machine.value;
  if (!isRecord(value)) return false;
  if (value.RETRY === 'backingOff') return true;
  return value.RUNNING === 'deciding' && isRecord(context.feedback) && context.feedback.kind === 'transport_retry';
}

/**
 * The snapshot with this version's transport counters and limits; one already in this shape (or not a
 * snapshot at all) is returned as it is.
 * @example
 * const machine = migrateTransportCounters(snapshotRecord.machine);
 */
export function migrateTransportCounters(machine: unknown): unknown {
  if (!isRecord(machine) || !isRecord(machine.context)) return machine;
  const context = machine.context;
  const task = context.task;
  if (context.transport !== undefined || !isRecord(task)) return machine;
  const { transportRetries, ...taskCounters } = task;
  const retries = typeof transportRetries === 'number' && Number.isFinite(transportRetries) ? transportRetries : 0;
  const limits = isRecord(context.limits) ? context.limits : {};
  const maxRetries = typeof limits.maxRetries === 'number' ? limits.maxRetries : DEFAULT_LIMITS.maxRetries;
  return {
    ...machine,
    context: {
      ...context,
      // null, as JSON writes Infinity: the switched-off default (see withSwitchedOffLimits).
      limits: { maxTransportAttempts: maxRetries + 1, maxTransportRetries: null, ...limits },
      task: taskCounters,
      transport: { consecutiveFailures: isRetryingCall(machine, context) ? retries : 0, retries },
    },
  };
}
