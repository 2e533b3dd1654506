import { describe, expect, it } from 'vitest';
import { DEFAULT_CIRCUIT_BREAKER_THRESHOLD } from '../constants.js';
import { LoopConfigError } from '../../contracts/errors.js';
import { ToolHealth } from './tool-health.js';

describe('ToolHealth', () => {
  it('starts empty with closed circuits', () => {
    const health = new ToolHealth();
    expect(health.snapshot()).toEqual({});
    expect(health.isOpen('search')).toBe(false);
    expect(health.threshold).toBe(DEFAULT_CIRCUIT_BREAKER_THRESHOLD);
  });

  it('counts calls, successes, failures, success rate and mean latency per tool', () => {
    const health = new ToolHealth();
    health.recordSuccess('search', 100);
    health.recordFailure('search', 300);
    health.recordSuccess('search', 200);
    health.recordSuccess('fetch', 10);
    expect(health.snapshot()).toEqual({
      search: {
        calls: 3,
        successes: 2,
        failures: 1,
        consecutiveFailures: 0,
        successRate: 2 / 3,
        meanLatencyMs: 200,
        circuitOpen: false,
        circuit: 'closed',
        weight: 3 / 4,
      },
      fetch: {
        calls: 1,
        successes: 1,
        failures: 0,
        consecutiveFailures: 0,
        successRate: 1,
        meanLatencyMs: 10,
        circuitOpen: false,
        circuit: 'closed',
        weight: 1,
      },
    });
  });

  it('opens the circuit after the default threshold of consecutive failures', () => {
    const health = new ToolHealth();
    for (let failure = 1; failure < DEFAULT_CIRCUIT_BREAKER_THRESHOLD; failure += 1) {
      health.recordFailure('search', 1);
      expect(health.isOpen('search')).toBe(false);
    }
    health.recordFailure('search', 1);
    expect(health.isOpen('search')).toBe(true);
    expect(health.snapshot().search).toMatchObject({
      consecutiveFailures: DEFAULT_CIRCUIT_BREAKER_THRESHOLD,
      circuitOpen: true,
    });
    expect(health.isOpen('fetch')).toBe(false);
  });

  it('closes the circuit on a success and needs a full new streak to reopen', () => {
    const health = new ToolHealth({ threshold: 2 });
    health.recordFailure('search', 1);
    health.recordFailure('search', 1);
    expect(health.isOpen('search')).toBe(true);
    health.recordSuccess('search', 1);
    expect(health.isOpen('search')).toBe(false);
    health.recordFailure('search', 1);
    expect(health.isOpen('search')).toBe(false);
    health.recordFailure('search', 1);
    expect(health.isOpen('search')).toBe(true);
    expect(health.snapshot().search).toMatchObject({ calls: 5, failures: 4, successes: 1 });
  });

  it('does not let failures separated by a success add up', () => {
    const health = new ToolHealth({ threshold: 2 });
    health.recordFailure('search', 1);
    health.recordSuccess('search', 1);
    health.recordFailure('search', 1);
    expect(health.isOpen('search')).toBe(false);
  });

  it('ignores nonsensical latencies instead of poisoning the mean', () => {
    const health = new ToolHealth();
    health.recordSuccess('search', Number.NaN);
    health.recordSuccess('search', -50);
    health.recordSuccess('search', 30);
    expect(health.snapshot().search?.meanLatencyMs).toBe(10);
  });

  it('keeps a tool named __proto__ as an ordinary entry', () => {
    const health = new ToolHealth();
    health.recordSuccess('__proto__', 5);
    const snapshot = health.snapshot();
    expect(Object.keys(snapshot)).toEqual(['__proto__']);
    expect(Object.getPrototypeOf(snapshot)).toBe(Object.prototype);
  });

  it('returns a copy that later calls do not change', () => {
    const health = new ToolHealth();
    health.recordSuccess('search', 5);
    const before = health.snapshot();
    health.recordFailure('search', 5);
    expect(before.search?.calls).toBe(1);
  });

  it.each([0, -1, 1.5, Number.NaN])('rejects threshold %s', (threshold) => {
    expect(() => new ToolHealth({ threshold })).toThrow(LoopConfigError);
    expect(() => new ToolHealth({ threshold })).toThrow(/threshold: must be a positive integer/);
  });
});

describe('ToolHealth half-open circuit', () => {
  function healthAt(start = 0) {
    let now = start;
    const health = new ToolHealth({ threshold: 2, cooldownMs: 1_000, now: () => now });
    return { health, advance: (ms: number) => (now += ms) };
  }

  it('withholds the tool during the cooldown and offers it again after', () => {
    const { health, advance } = healthAt();
    health.recordFailure('search', 5);
    health.recordFailure('search', 5);
    expect(health.isOpen('search')).toBe(true);
    advance(999);
    expect(health.isOpen('search')).toBe(true);
    advance(1);
    expect(health.isOpen('search')).toBe(false);
    expect(health.snapshot().search?.circuitOpen).toBe(false);
  });

  it('reopens on one more failure after the cooldown, and closes for good on a success', () => {
    const { health, advance } = healthAt();
    health.recordFailure('search', 5);
    health.recordFailure('search', 5);
    advance(1_000);
    health.recordFailure('search', 5);
    expect(health.isOpen('search')).toBe(true);
    advance(1_000);
    health.recordSuccess('search', 5);
    expect(health.isOpen('search')).toBe(false);
    health.recordFailure('search', 5);
    expect(health.isOpen('search')).toBe(false);
  });

  it('rejects a negative or NaN cooldown, naming the field', () => {
    expect(() => new ToolHealth({ cooldownMs: -1 })).toThrow(/cooldownMs/);
    expect(() => new ToolHealth({ cooldownMs: Number.NaN })).toThrow(/cooldownMs/);
  });

  it('names the circuit state: closed, open while cooling down, half-open after, reopened by one failure, closed by a success', () => {
    let now = 0;
    const health = new ToolHealth({ threshold: 2, cooldownMs: 1_000, now: () => now });
    expect(health.circuit('kb')).toBe('closed');
    health.recordFailure('kb', 1);
    expect(health.circuit('kb')).toBe('closed');
    health.recordFailure('kb', 1);
    expect(health.circuit('kb')).toBe('open');
    now = 1_000;
    expect(health.circuit('kb')).toBe('half_open');
    expect(health.isOpen('kb')).toBe(false);
    health.recordFailure('kb', 1);
    expect(health.circuit('kb')).toBe('open');
    now = 2_000;
    health.recordSuccess('kb', 1);
    expect(health.snapshot().kb).toMatchObject({ circuit: 'closed', circuitOpen: false, consecutiveFailures: 0 });
  });

  it('weighs a tool by its success rate smoothed by one assumed success, and orders by weight, ties as given', () => {
    const health = new ToolHealth();
    expect(health.weight('never-called')).toBe(1);
    health.recordFailure('kb', 1);
    expect(health.weight('kb')).toBe(1 / 2);
    for (let call = 0; call < 3; call++) health.recordSuccess('kb', 1);
    expect(health.weight('kb')).toBe(4 / 5);
    health.recordSuccess('calculator', 1);
    expect(health.order(['kb', 'time', 'calculator'])).toEqual(['time', 'calculator', 'kb']);
    expect(health.order([])).toEqual([]);
  });

  it('cools a learned streak stamped ahead of its own clock down for cooldownMs, not for the gap as well', () => {
    const DAY = 86_400_000;
    let now = 1_000;
    const health = new ToolHealth({ threshold: 3, cooldownMs: 30_000, now: () => now });
    // Learned by another process whose clock is two days ahead (or by a resumed run's continuing clock).
    health.restoreLearned({ kb: { weight: 0.4, consecutiveFailures: 3, lastFailureAt: now + 2 * DAY } });
    expect(health.circuit('kb')).toBe('open');
    now += 30_000;
    expect(health.circuit('kb')).toBe('half_open');
    // A streak stamped in its past keeps its own age.
    health.restoreLearned({ kb: { weight: 0.4, consecutiveFailures: 3, lastFailureAt: now - 10_000 } });
    expect(health.circuit('kb')).toBe('open');
    now += 20_000;
    expect(health.circuit('kb')).toBe('half_open');
  });
});

describe('ToolHealth, held by a run in flight', () => {
  /** Counts the Maps made while `make` runs (the class's own fields included). */
  function mapsMadeBy(make: () => unknown): number {
    const original = globalThis.Map;
    let made = 0;
    globalThis.Map = class CountedMap<K, V> extends original<K, V> {
      constructor(entries?: Iterable<readonly [K, V]> | null) {
        super(entries);
        made++;
      }
    } as MapConstructor;
    try {
      make();
    } finally {
      globalThis.Map = original;
    }
    return made;
  }

  it('makes no Map for what it learned until it learns something, and learns nothing from an empty record', () => {
    expect(mapsMadeBy(() => new ToolHealth())).toBe(1);
    const health = new ToolHealth({ threshold: 2, now: () => 1_000 });
    expect(mapsMadeBy(() => health.restoreLearned({}))).toBe(1);
    expect(health.weight('search')).toBe(1);
    health.restoreLearned({ search: { weight: 0.25, consecutiveFailures: 2, lastFailureAt: 900 } });
    expect(health.weight('search')).toBe(0.25);
    expect(health.circuit('search')).toBe('open');
    health.restoreLearned({});
    expect(health.weight('search')).toBe(1);
    expect(health.circuit('search')).toBe('closed');
  });
});
