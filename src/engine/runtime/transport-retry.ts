/**
 * Transport retries of the calls a step makes in place, inside one effect: LLM judges and context
 * summaries. Like the loop's own model call, each call has `maxTransportAttempts` attempts of its own
 * (its backoff exponent starts at 0), and each retry counts against the run's `maxTransportRetries`.
 */
import { ordinal } from '../../../actions/stop-detail.js';
import type { LoopContext } from '../../../machines/types.js';
import { backoffDelay, type BackoffOptions } from './retry-policy.js';

/**
 * What follows a transport failure of an in-place call: a retry after `delayMs`, or why there is none, in
 * the words of the loop's own stop details (what ran out, then the option to raise).
 * @example
 * const next = nextTransportAttempt({ call: 'LLM judge "tone"', context, failures: 1, retriesSoFar: 0, retryAfterMs: undefined, backoff, random: Math.random });
 * if ('delayMs' in next) await sleep(next.delayMs);
 */
export type NextTransportAttempt = { delayMs: number } | { refusal: { what: string; raise: string } };

export interface TransportFailureFacts {
  /** The call, as the message names it: `LLM judge "tone"`, `the context summary call`. */
  call: string;
  context: LoopContext;
  /** Failed attempts of this call in a row, the one just failed included. */
  failures: number;
  /** Retries the effect in hand already made (other judges, this call's earlier attempts), on top of the run's. */
  retriesSoFar: number;
  retryAfterMs: number | undefined;
  backoff: BackoffOptions;
  random: () => number;
}

export function nextTransportAttempt({
  call,
  context,
  failures,
  retriesSoFar,
  retryAfterMs,
  backoff,
  random,
}: TransportFailureFacts): NextTransportAttempt {
  const { maxTransportAttempts, maxTransportRetries } = context.limits;
  if (failures >= maxTransportAttempts) {
    return {
      refusal: {
        what: `${ordinal(failures)} consecutive transport failure of ${call}`,
        raise: `raise limits.maxTransportAttempts (${maxTransportAttempts})`,
      },
    };
  }
  const runRetries = context.transport.retries + retriesSoFar;
  if (runRetries >= maxTransportRetries) {
    return {
      refusal: {
        what: `${call} failed with the run's transport retries spent (${runRetries} of maxTransportRetries ${maxTransportRetries})`,
        raise: 'raise limits.maxTransportRetries',
      },
    };
  }
  // The exponent restarts with each call: this call's failures so far, never the run's.
  return { delayMs: backoffDelay({ attempt: failures - 1, retryAfterMs, options: backoff, random }) };
}

/**
 * A refusal with the failure it follows, worded like the loop's stop details (the provider's message last):
 * `3rd consecutive transport failure of … (HTTP 503); raise …. Last error: <message>`.
 * @example
 * const text = describeRefusal(next.refusal, 'HTTP 503', 'service unavailable');
 */
export function describeRefusal(refusal: { what: string; raise: string }, label: string, message: string): string {
  return `${refusal.what} (${label}); ${refusal.raise}. Last error: ${message}`;
}
