/**
 * The clock a replay injects into the runtime: a virtual clock (like `virtualClock()` from
 * `loopstate/testing`: timers fire only when time is advanced, nothing really sleeps) with three
 * controls a replay needs to produce an exact abstract outcome:
 * - `observeLateAt` moves time without running due timers. An outcome observed past the deadline
 *   (a late reply, a slow evaluator) reaches the driver before the deadline timer's callback has had
 *   its turn, as on a busy event loop; with `advance`, the timer would abort the effect first and the
 *   outcome would become `run.deadlineReached`.
 * - `failNextNow` makes the next `now()` throw once: an effect that fails outright (`run.faulted`).
 * - `sleeper` decides how the next backoff sleep ends (on time, late, cancelled, failed).
 */
import type { Clock } from 'loopstate';

export type Sleeper = (ms: number, signal: AbortSignal, clock: ReplayClock) => Promise<void>;

/** The error every injected fault throws; the driver reports it as `Error: injected fault`. */
export function injectedFault(): Error {
  return new Error('injected fault');
}

export class ReplayClock implements Clock {
  #now: number;
  #nextTimerId = 0;
  readonly #timers = new Map<number, { dueAt: number; callback: () => void }>();
  #failNextNow = false;
  /** How the next sleep ends; null sleeps on time. */
  sleeper: Sleeper | null = null;

  constructor(startMs: number) {
    this.#now = startMs;
  }

  now(): number {
    if (this.#failNextNow) {
      this.#failNextNow = false;
      throw injectedFault();
    }
    return this.#now;
  }

  /** Moves time forward, firing the timers that fall due in due order (looked up afresh: a callback may cancel one). */
  advance(ms: number): void {
    const until = this.#now + Math.max(0, ms);
    for (let due = this.#nextDue(until); due !== undefined; due = this.#nextDue(until)) {
      const [id, timer] = due;
      this.#timers.delete(id);
      this.#now = Math.max(this.#now, timer.dueAt);
      timer.callback();
    }
    this.#now = Math.max(this.#now, until);
  }

  #nextDue(until: number): [number, { dueAt: number; callback: () => void }] | undefined {
    let next: [number, { dueAt: number; callback: () => void }] | undefined;
    for (const entry of this.#timers)
      if (entry[1].dueAt <= until && (next === undefined || entry[1].dueAt < next[1].dueAt)) next = entry;
    return next;
  }

  advanceTo(at: number): void {
    this.advance(at - this.#now);
  }

  /** Moves time to `at` (never backwards) without running due timers. */
  observeLateAt(at: number): void {
    this.#now = Math.max(this.#now, at);
  }

  failNextNow(): void {
    this.#failNextNow = true;
  }

  sleep(ms: number, signal: AbortSignal): Promise<void> {
    if (signal.aborted) return Promise.reject(signal.reason as Error);
    const sleeper = this.sleeper;
    this.sleeper = null;
    if (sleeper !== null) return sleeper(ms, signal, this);
    this.advance(ms);
    return signal.aborted ? Promise.reject(signal.reason as Error) : Promise.resolve();
  }

  setTimer(ms: number, callback: () => void): () => void {
    const id = this.#nextTimerId++;
    this.#timers.set(id, { dueAt: this.#now + Math.max(0, ms), callback });
    return () => {
      this.#timers.delete(id);
    };
  }
}
