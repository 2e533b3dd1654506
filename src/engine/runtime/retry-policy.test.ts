import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { DEFAULT_BACKOFF } from '../constants.js';
import { backoffDelay, type BackoffOptions } from './retry-policy.js';

const options: BackoffOptions = { baseMs: 100, maxMs: 1_000 };
/** The largest double below 1, i.e. the top of Math.random's [0, 1) range. */
const JUST_BELOW_ONE = 1 - Number.EPSILON / 2;

const delay = (attempt: number, random: number, retryAfterMs?: number, backoff: BackoffOptions = options) =>
  backoffDelay({ attempt, retryAfterMs, options: backoff, random: () => random });

describe('backoffDelay', () => {
  it('is 0 when the jitter source returns 0, at any attempt', () => {
    expect(delay(0, 0)).toBe(0);
    expect(delay(3, 0)).toBe(0);
    expect(delay(50, 0)).toBe(0);
  });

  it('stays just under the ceiling base * 2^attempt when the jitter source returns its maximum', () => {
    expect(delay(0, JUST_BELOW_ONE)).toBe(99);
    expect(delay(1, JUST_BELOW_ONE)).toBe(199);
    expect(delay(2, JUST_BELOW_ONE)).toBe(399);
    expect(delay(3, JUST_BELOW_ONE)).toBe(799);
  });

  it('scales linearly with the jitter source inside the ceiling (full jitter, not equal jitter)', () => {
    expect(delay(2, 0.25)).toBe(100);
    expect(delay(2, 0.5)).toBe(200);
    expect(delay(2, 0.75)).toBe(300);
  });

  it('rounds down to whole milliseconds', () => {
    expect(delay(0, 0.123)).toBe(12);
    expect(Number.isInteger(delay(1, 0.3333))).toBe(true);
  });

  it('caps the ceiling at maxMs once base * 2^attempt exceeds it, even when 2^attempt overflows', () => {
    expect(delay(4, JUST_BELOW_ONE)).toBe(999); // 100 * 16 = 1600 > 1000
    expect(delay(4, 0.5)).toBe(500);
    expect(delay(2_000, JUST_BELOW_ONE)).toBe(999); // 2^2000 is Infinity
    expect(delay(2_000, 0.5)).toBe(500);
  });

  it('uses the default options as documented: 500 ms base, 30 s cap', () => {
    expect(delay(0, JUST_BELOW_ONE, undefined, DEFAULT_BACKOFF)).toBe(499);
    expect(delay(20, JUST_BELOW_ONE, undefined, DEFAULT_BACKOFF)).toBe(29_999);
  });

  it('calls the jitter source exactly once per delay', () => {
    let calls = 0;
    backoffDelay({ attempt: 1, retryAfterMs: 5_000, options, random: () => (calls++, 0.5) });
    expect(calls).toBe(1);
  });

  it('treats Retry-After as a floor: never earlier than the server asked', () => {
    expect(delay(0, 0, 750)).toBe(750);
    expect(delay(0, JUST_BELOW_ONE, 750)).toBe(750); // jitter 99 < 750
    expect(delay(3, JUST_BELOW_ONE, 50)).toBe(799); // jitter 799 > 50: the later one wins
  });

  it('honours a Retry-After above maxMs: the cap bounds our jitter, not the server', () => {
    expect(delay(10, JUST_BELOW_ONE, 60_000)).toBe(60_000);
  });

  it('waits out a Retry-After only up to maxRetryAfterMs (60 s by default)', () => {
    expect(delay(0, 0, 3_600_000)).toBe(60_000);
    expect(delay(0, 0, 3_600_000, { ...options, maxRetryAfterMs: 2_000 })).toBe(2_000);
    // The cap bounds the server's wish, never our own jitter.
    expect(delay(3, JUST_BELOW_ONE, 5_000, { ...options, maxRetryAfterMs: 10 })).toBe(799);
  });

  it('treats a Retry-After of 0 like no header', () => {
    expect(delay(2, 0.5, 0)).toBe(delay(2, 0.5));
    expect(delay(2, 0, 0)).toBe(0);
  });

  it('is within [retryAfter ?? 0, max(retryAfter ?? 0, cap)) for any attempt, jitter and Retry-After', () => {
    fc.assert(
      fc.property(
        fc.nat({ max: 64 }),
        fc.double({ min: 0, max: 1, maxExcluded: true, noNaN: true }),
        fc.option(fc.nat({ max: 120_000 }), { nil: undefined }),
        fc.integer({ min: 1, max: 10_000 }),
        fc.integer({ min: 1, max: 100_000 }),
        (attempt, random, retryAfterMs, baseMs, maxMs) => {
          const cap = Math.min(maxMs, baseMs * 2 ** attempt);
          const result = backoffDelay({ attempt, retryAfterMs, options: { baseMs, maxMs }, random: () => random });
          const floor = Math.min(retryAfterMs ?? 0, DEFAULT_BACKOFF.maxRetryAfterMs);
          expect(Number.isInteger(result)).toBe(true);
          expect(result).toBeGreaterThanOrEqual(floor);
          expect(result).toBeLessThanOrEqual(Math.max(floor, cap));
          // Without a Retry-After above the cap the delay is strictly below the cap (full jitter's open interval).
          if (floor < cap) expect(result).toBeLessThan(cap);
        },
      ),
    );
  });
});

describe('backoffDelay with garbled inputs', () => {
  const options = { baseMs: 100, maxMs: 1_000 };
  it('ignores a non-finite or negative Retry-After', () => {
    for (const retryAfterMs of [Number.NaN, Number.POSITIVE_INFINITY, -5]) {
      expect(backoffDelay({ attempt: 0, retryAfterMs, options, random: () => 0.5 })).toBe(50);
    }
  });

  it('clamps a random source outside [0, 1) and treats NaN as 0', () => {
    expect(backoffDelay({ attempt: 0, retryAfterMs: undefined, options, random: () => 7 })).toBe(99);
    expect(backoffDelay({ attempt: 0, retryAfterMs: undefined, options, random: () => -3 })).toBe(0);
    expect(backoffDelay({ attempt: 0, retryAfterMs: undefined, options, random: () => Number.NaN })).toBe(0);
  });
});
