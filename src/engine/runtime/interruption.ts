import type { LoopEvent } from '../../../machines/types.js';

/** Cancel and deadline reach running effects as an abort of the run's signal with this reason. */
export class RunInterruption extends Error {
  constructor(
    readonly kind: 'cancelled' | 'deadline',
    message: string,
  ) {
    super(message);
    this.name = 'RunInterruption';
  }
}

/** What an abort is read from: an `AbortSignal`, or the run's own abort (`RunAbort`) without making its signal. */
export interface AbortState {
  readonly aborted: boolean;
  readonly reason: unknown;
}

export function interruptionOf(signal: AbortState): RunInterruption {
  return signal.reason instanceof RunInterruption
    ? signal.reason
    : new RunInterruption('cancelled', String(signal.reason ?? 'aborted'));
}

/**
 * Settles with `promise`, or rejects as soon as `signal` aborts: an effect that ignores its
 * signal must not hang the run past its deadline.
 */
export function untilAborted<T>(promise: Promise<T>, signal: AbortSignal): Promise<T> {
  if (signal.aborted) {
    // Abandoned, but its own rejection must not surface as an unhandled one.
    promise.catch(() => undefined);
    return Promise.reject(signal.reason);
  }
  return new Promise<T>((resolve, reject) => {
    const onAbort = () => reject(signal.reason);
    signal.addEventListener('abort', onAbort, { once: true });
    promise.then(
      (value) => {
        signal.removeEventListener('abort', onAbort);
        resolve(value);
      },
      (error: unknown) => {
        signal.removeEventListener('abort', onAbort);
        reject(error);
      },
    );
  });
}

/**
 * The event for an interrupted effect: deadline or cancel, with the model calls it had started
 * (a call abandoned mid-flight is still a call made).
 */
export function interruptionEvent(signal: AbortState, at: number, modelCalls = 0): LoopEvent {
  const interruption = interruptionOf(signal);
  const spent = modelCalls > 0 ? { modelCalls } : {};
  return interruption.kind === 'deadline'
    ? { type: 'run.deadlineReached', at, ...spent }
    : { type: 'run.cancelRequested', at, message: interruption.message, ...spent };
}
