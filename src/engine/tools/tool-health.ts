/**
 * Per-tool health: success rate, latency and consecutive failures, with a circuit breaker
 * that withholds a tool after N failures in a row. One instance lives as long as the run (or longer,
 * when runs share it).
 */
import { DEFAULT_CIRCUIT_BREAKER_THRESHOLD, DEFAULT_CIRCUIT_COOLDOWN_MS } from '../constants.js';
import { LoopConfigError } from '../../contracts/errors.js';

/**
 * One tool's health, as a plain object (safe to log or persist).
 * @example
 * const stats: ToolHealthStats | undefined = health.snapshot().get_order_status; // undefined until its first call
 * if (stats && stats.successRate < 0.5) console.warn('flaky tool');
 */
export interface ToolHealthStats {
  calls: number;
  successes: number;
  failures: number;
  consecutiveFailures: number;
  /** successes / calls (a tool appears only after its first call, so calls > 0). */
  successRate: number;
  meanLatencyMs: number;
  circuitOpen: boolean;
  /** `closed`; `open` (withheld, cooling down); `half_open` (cooled down after a failure streak: offered again, one more failure reopens it). */
  circuit: CircuitState;
  /** The ordering weight, in [0, 1]: the success rate smoothed by one assumed success, or by the learned weight (see `ToolHealth.weight`). */
  weight: number;
}

/**
 * A tool's circuit breaker: `closed` (offered), `open` (withheld while it cools down), `half_open`
 * (cooled down after a failure streak: offered again on probation).
 * @example
 * const state: CircuitState = health.circuit('knowledge_base');
 */
export type CircuitState = 'closed' | 'open' | 'half_open';

// A broken clock must not poison the mean with NaN or negative time.
const sanitizeLatency = (latencyMs: number): number => (Number.isFinite(latencyMs) && latencyMs > 0 ? latencyMs : 0);

/**
 * One tool's raw health counters, as `persistedCounters` returns them.
 * @example
 * const counters: ToolHealthCounters = { calls: 1, successes: 1, failures: 0, consecutiveFailures: 0, totalLatencyMs: 12, lastFailureAt: 0 };
 */
export interface ToolHealthCounters {
  calls: number;
  successes: number;
  failures: number;
  consecutiveFailures: number;
  totalLatencyMs: number;
  lastFailureAt: number;
}

/**
 * What a tool's health starts from when it was learned across runs (`createLoop({ learning })`).
 * @example
 * health.restoreLearned({ search: { weight: 0.4, consecutiveFailures: 2, lastFailureAt: 1_700_000_000_000 } });
 */
export interface LearnedToolHealth {
  /** The learned weight, in [0, 1], standing in for the assumed success of a tool never called in this run. */
  weight: number;
  /** Failures in a row across earlier runs: they count towards this run's circuit breaker until a success. */
  consecutiveFailures: number;
  lastFailureAt: number;
}

const weightOf = (counters: ToolHealthCounters, prior = 1): number =>
  (counters.successes + prior) / (counters.calls + 1);

/**
 * Tracks how each tool has fared and opens its circuit after `threshold` consecutive failures.
 * After `cooldownMs` the circuit is half-open: the tool is offered again, one more failure
 * reopens it and a success closes it.
 * @example
 * const health = new ToolHealth({ threshold: 3 });
 * health.recordFailure('search', 120);
 * health.isOpen('search'); // false until three failures in a row
 */
export class ToolHealth {
  readonly threshold: number;
  readonly cooldownMs: number;
  readonly #counters = new Map<string, ToolHealthCounters>();
  /** Made when something is learned: most runs learn nothing, and a run in flight holds its health throughout. */
  #learned: Map<string, LearnedToolHealth> | undefined = undefined;
  readonly #now: () => number;
  #revision = 0;

  constructor(options: { threshold?: number; cooldownMs?: number; now?: () => number } = {}) {
    const threshold = options.threshold ?? DEFAULT_CIRCUIT_BREAKER_THRESHOLD;
    if (!Number.isInteger(threshold) || threshold < 1) {
      throw new LoopConfigError({
        issues: [{ path: 'threshold', message: `must be a positive integer, got ${String(threshold)}` }],
      });
    }
    this.threshold = threshold;
    const cooldownMs = options.cooldownMs ?? DEFAULT_CIRCUIT_COOLDOWN_MS;
    if (!(cooldownMs >= 0)) {
      throw new LoopConfigError({
        issues: [{ path: 'cooldownMs', message: `must be a number >= 0, got ${String(cooldownMs)}` }],
      });
    }
    this.cooldownMs = cooldownMs;
    this.#now = options.now ?? (() => Date.now());
  }

  /** Records a call that returned a usable result; closes the tool's circuit. */
  recordSuccess(name: string, latencyMs: number): void {
    const counters = this.#countersOf(name);
    this.#revision += 1;
    counters.calls += 1;
    counters.successes += 1;
    counters.consecutiveFailures = 0;
    counters.totalLatencyMs += sanitizeLatency(latencyMs);
  }

  /** Records a call that failed, timed out or whose outcome is unknown. */
  recordFailure(name: string, latencyMs: number): void {
    const counters = this.#countersOf(name);
    this.#revision += 1;
    counters.calls += 1;
    counters.failures += 1;
    counters.consecutiveFailures += 1;
    counters.totalLatencyMs += sanitizeLatency(latencyMs);
    counters.lastFailureAt = this.#now();
  }

  /** True while the tool has failed `threshold` or more times in a row and is cooling down; it should be withheld. */
  isOpen(name: string): boolean {
    return this.circuit(name) === 'open';
  }

  /** The tool's circuit breaker state; `closed` for a tool never called (and never failing in a row before, when learned). */
  circuit(name: string): CircuitState {
    return this.#circuit(this.#counters.get(name), this.#learned?.get(name));
  }

  #circuit(counters: ToolHealthCounters | undefined, learned: LearnedToolHealth | undefined): CircuitState {
    // A learned streak goes on until this run's first success.
    const carried = learned !== undefined && (counters === undefined || counters.successes === 0);
    const streak = (counters?.consecutiveFailures ?? 0) + (carried ? learned.consecutiveFailures : 0);
    if (streak < this.threshold) return 'closed';
    const lastFailureAt =
      counters !== undefined && counters.failures > 0 ? counters.lastFailureAt : (learned?.lastFailureAt ?? 0);
    return this.#now() - lastFailureAt < this.cooldownMs ? 'open' : 'half_open';
  }

  /**
   * How much to prefer the tool: (successes + 1) / (calls + 1), its success rate smoothed by one assumed
   * success, so a tool never called weighs 1 and one early failure does not sink it to 0. With a learned
   * weight (see `restoreLearned`) the assumed call succeeds by that weight: (successes + w) / (calls + 1).
   */
  weight(name: string): number {
    const counters = this.#counters.get(name);
    const prior = this.#learned?.get(name)?.weight ?? 1;
    return counters === undefined ? prior : weightOf(counters, prior);
  }

  /**
   * Starts from what earlier runs learned: each tool's weight orders it before its first call here, and
   * its failure streak counts towards the circuit breaker until a success. Replaces what was learned before.
   * @example
   * health.restoreLearned({ search: { weight: 0.4, consecutiveFailures: 3, lastFailureAt: clock.now() } });
   * health.isOpen('search'); // true while it cools down (threshold 3)
   */
  restoreLearned(learned: Readonly<Record<string, LearnedToolHealth>>): void {
    const restored = new Map<string, LearnedToolHealth>();
    // A failure stamped later than this run's clock (another process's clock, a resumed run's clock that
    // continues where its journal left off) counts as failing now: it cools down for `cooldownMs`, not
    // for that gap as well.
    let now: number;
    try {
      now = this.#now();
    } catch {
      now = Infinity;
    }
    for (const [name, tool] of Object.entries(learned))
      restored.set(name, { ...tool, lastFailureAt: Math.min(tool.lastFailureAt, now) });
    this.#learned = restored.size === 0 ? undefined : restored;
  }

  /**
   * The names ordered by weight, highest first; equal weights keep the given order, so tools that
   * never failed are offered as declared.
   */
  order(names: readonly string[]): string[] {
    return names
      .map((name, index) => ({ name, index, weight: this.weight(name) }))
      .sort((left, right) => right.weight - left.weight || left.index - right.index)
      .map(({ name }) => name);
  }

  /** Every tool that has been called, by name. */
  snapshot(): Record<string, ToolHealthStats> {
    // fromEntries defines own properties, so a tool named `__proto__` cannot touch the prototype.
    return Object.fromEntries(
      [...this.#counters].map(([name, counters]): [string, ToolHealthStats] => [
        name,
        {
          calls: counters.calls,
          successes: counters.successes,
          failures: counters.failures,
          consecutiveFailures: counters.consecutiveFailures,
          successRate: counters.successes / counters.calls,
          meanLatencyMs: counters.totalLatencyMs / counters.calls,
          circuitOpen: this.circuit(name) === 'open',
          circuit: this.circuit(name),
          weight: this.weight(name),
        },
      ]),
    );
  }

  /**
   * The raw counters by tool, as plain data: a durable run persists its own health with the run.
   * @example
   * const saved = JSON.stringify(health.persistedCounters());
   */
  persistedCounters(): Record<string, ToolHealthCounters> {
    return Object.fromEntries([...this.#counters].map(([name, counters]) => [name, { ...counters }]));
  }

  /**
   * Replaces every counter with what `persistedCounters` returned.
   * @example
   * health.restoreCounters(JSON.parse(saved));
   */
  restoreCounters(counters: Readonly<Record<string, ToolHealthCounters>>): void {
    this.#revision += 1;
    this.#counters.clear();
    for (const [name, saved] of Object.entries(counters)) this.#counters.set(name, { ...saved });
  }

  /**
   * Goes up whenever `persistedCounters()` would return something else: a durable run journals them only then.
   * @example
   * const before = health.revision;
   * health.recordSuccess('search', 40);
   * health.revision > before; // true
   */
  get revision(): number {
    return this.#revision;
  }

  #countersOf(name: string): ToolHealthCounters {
    let counters = this.#counters.get(name);
    if (!counters) {
      counters = { calls: 0, successes: 0, failures: 0, consecutiveFailures: 0, totalLatencyMs: 0, lastFailureAt: 0 };
      this.#counters.set(name, counters);
    }
    return counters;
  }
}
