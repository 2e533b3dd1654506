/**
 * Transport backoff (DESIGN §4): exponential with full jitter, Retry-After honoured.
 * Full jitter (AWS architecture blog, "Exponential Backoff And Jitter") spreads retries of
 * many clients evenly over [0, cap] instead of synchronising them.
 */
export interface BackoffOptions {
  baseMs: number;
  maxMs: number;
}

/**
 * Delay before transport retry number `attempt` (0-based); `random` returns [0, 1).
 * A server's Retry-After is a floor: we never retry earlier than it asked.
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
  const jittered = Math.floor(random() * ceiling);
  return retryAfterMs === undefined ? jittered : Math.max(retryAfterMs, jittered);
}
