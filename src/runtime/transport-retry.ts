/**
 * Transport retries of the calls a step makes in place, inside one effect: LLM judges and context
 * summaries. Like the loop's own model call, each call has `maxTransportAttempts` attempts of its own
 * (its backoff exponent starts at 0), and each retry counts against the run's `maxTransportRetries`.
 */
import { ordinal } from '../../actions/stop-detail.js';
import type { LoopContext } from '../../machines/types.js';
import { backoffDelay, type BackoffOptions } from './retry-policy.js';

/**
 * What follows a transport failure of an in-place call: a retry after `delayMs`, or the reason there is none.
 * @example
 * const next = nextTransportAttempt({ context, failures: 1, retriesSoFar: 0, retryAfterMs: undefined, backoff, random: Math.random });
 * if ('delayMs' in next) await sleep(next.delayMs);
 */
export type NextTransportAttempt = { delayMs: number } | { refusal: string };

export interface TransportFailureFacts {
  context: LoopContext;
  /** Failed attempts of this call in a row, the one just failed included. */
  failures: number;
  /** Retries the effect in hand already made (other judges, this call's earlier attempts), on top of the run's. */
  retriesSoFar: number;
  retryAfterMs: number | undefined;
  backoff: BackoffOptions;
  random: () => number;
}

export function nextTransportAttempt({ context, failures, retriesSoFar, retryAfterMs, backoff, random }: TransportFailureFacts): NextTransportAttempt {
  const { maxTransportAttempts, maxTransportRetries } = context.limits;
  if (failures >= maxTransportAttempts) return { refusal: `${ordinal(failures)} consecutive transport failure; raise limits.maxTransportAttempts (${maxTransportAttempts})` };
  const runRetries = context.transport.retries + retriesSoFar;
  if (runRetries >= maxTransportRetries) {
    return { refusal: `the run's transport retries are spent (${runRetries} of maxTransportRetries ${maxTransportRetries}); raise limits.maxTransportRetries` };
  }
  return { delayMs: backoffDelay({ attempt: failures - 1, retryAfterMs, options: backoff, random }) };
}
