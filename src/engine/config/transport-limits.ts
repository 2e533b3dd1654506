/**
 * Transport attempts are per model call (`limits.maxTransportAttempts`). They used to be counted per task
 * under `limits.maxRetries`, which now bounds reflection alone: a loop that still sets only `maxRetries`
 * keeps that many retries per call, with a warning on each run saying how to choose explicitly.
 */
import type { LoopLimits } from '../../../machines/types.js';
import { DEFAULT_LIMITS } from '../constants.js';

/**
 * Attempts per call: as given, else `maxRetries + 1` when only `maxRetries` is given (its old meaning), else the default.
 * @example
 * transportAttemptsOf({ maxRetries: 5 }) // 6
 */
export function transportAttemptsOf(limits: Partial<LoopLimits> | undefined): number {
  if (limits?.maxTransportAttempts !== undefined) return limits.maxTransportAttempts;
  return limits?.maxRetries === undefined ? DEFAULT_LIMITS.maxTransportAttempts : limits.maxRetries + 1;
}

/**
 * The warning a run carries while `maxRetries` still sets its transport attempts, or null when it does not (or
 * when the fallback gives the default anyway, so dropping it later changes nothing).
 * @example
 * transportAttemptsWarning({ maxRetries: 5 }) // 'limits.maxRetries (5) now bounds reflection retries only; ...'
 */
export function transportAttemptsWarning(limits: Partial<LoopLimits> | undefined): string | null {
  if (limits?.maxRetries === undefined || limits.maxTransportAttempts !== undefined) return null;
  const attempts = transportAttemptsOf(limits);
  if (attempts === DEFAULT_LIMITS.maxTransportAttempts) return null;
  return (
    `limits.maxRetries (${limits.maxRetries}) now bounds reflection retries only; transport attempts are per model call (limits.maxTransportAttempts). ` +
    `Until limits.maxTransportAttempts is set, each call gets maxRetries + 1 = ${attempts} attempts; this fallback is deprecated`
  );
}
