/**
 * Transport backoff: exponential with full jitter, Retry-After honoured.
 * Full jitter (AWS architecture blog, "Exponential Backoff And Jitter") spreads retries of
 * many clients evenly over [0, cap] instead of synchronising them.
 */
import { DEFAULT_BACKOFF } from '../constants.js';

export interface BackoffOptions {
  baseMs: number;
  maxMs: number;
  /**
   * Longest Retry-After waited out (default 60 s): a server asking for an hour must not park a run
   * for an hour. It bounds the server's wish, as `maxMs` bounds our own jitter.
   */
  maxRetryAfterMs?: number;
}

/**
 * Delay before transport retry number `attempt` (0-based); `random` returns [0, 1).
 * A server's Retry-After is a floor: we never retry earlier than it asked, up to `maxRetryAfterMs`.
 * @example
 * backoffDelay({ attempt: 1, retryAfterMs: undefined, options: { baseMs: 500, maxMs: 30_000 }, random: Math.random })
 */
export function backoffDelay({
  attempt,
  retryAfterMs,
  options,
  random,
}: {
  attempt: number;
  retryAfterMs: number | undefined;
  options: BackoffOptions;
  random: () => number;
}): number {
  const ceiling = Math.min(options.maxMs, options.baseMs * 2 ** attempt);
  // A misbehaving random source or a garbled Retry-After must not produce NaN or a negative sleep.
  const sample = random();
  const unit = Number.isFinite(sample) ? Math.min(Math.max(sample, 0), 1 - Number.EPSILON) : 0;
  const jittered = Math.floor(unit * ceiling);
  if (retryAfterMs === undefined || !Number.isFinite(retryAfterMs) || retryAfterMs < 0) return jittered;
  return Math.max(Math.min(retryAfterMs, options.maxRetryAfterMs ?? DEFAULT_BACKOFF.maxRetryAfterMs), jittered);
}
