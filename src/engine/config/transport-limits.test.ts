import { describe, expect, it } from 'vitest';
import { DEFAULT_LIMITS } from '../constants.js';
import { LoopConfigError } from '../../contracts/errors.js';
import { createLoop, loopConfigOf } from '../loop.js';
import { reply, scriptedModel } from '../../testing/index.js';
import { transportAttemptsOf, transportAttemptsWarning } from './transport-limits.js';

const model = () => scriptedModel([reply('ok')]);

function issuesOf(limits: Record<string, unknown>): { path: string; message: string }[] {
  try {
    createLoop({ model: model(), limits });
  } catch (error) {
    expect(error).toBeInstanceOf(LoopConfigError);
    return [...(error as LoopConfigError).issues];
  }
  throw new Error('createLoop accepted the limits');
}

const resolvedLimits = (limits: Record<string, unknown>) =>
  loopConfigOf(createLoop({ model: model(), limits }))?.limits;

describe('transport limits in the config', () => {
  it('default to 3 attempts per call and no run-wide cap; undefined is the default, never off', () => {
    expect(DEFAULT_LIMITS).toMatchObject({ maxTransportAttempts: 3, maxTransportRetries: Infinity });
    expect(resolvedLimits({})).toMatchObject({ maxTransportAttempts: 3, maxTransportRetries: Infinity });
    expect(resolvedLimits({ maxTransportAttempts: undefined, maxTransportRetries: undefined })).toMatchObject({
      maxTransportAttempts: 3,
      maxTransportRetries: Infinity,
    });
  });

  it('accept a whole number of attempts from 1, and a run-wide cap from 0 or Infinity', () => {
    expect(resolvedLimits({ maxTransportAttempts: 1, maxTransportRetries: 0 })).toMatchObject({
      maxTransportAttempts: 1,
      maxTransportRetries: 0,
    });
    expect(resolvedLimits({ maxTransportAttempts: 7, maxTransportRetries: Infinity })).toMatchObject({
      maxTransportAttempts: 7,
      maxTransportRetries: Infinity,
    });
  });

  it.each([
    [{ maxTransportAttempts: 0 }, 'limits.maxTransportAttempts', /too small/i],
    [{ maxTransportAttempts: 2.5 }, 'limits.maxTransportAttempts', /^expected a whole number, got 2.5$/],
    // Every retry cycle must pass a finite counter: a call may not retry for ever.
    [{ maxTransportAttempts: Infinity }, 'limits.maxTransportAttempts', /expected a finite number, got Infinity/],
    [{ maxTransportAttempts: Number.NaN }, 'limits.maxTransportAttempts', /expected a number, got NaN/],
    [{ maxTransportRetries: -1 }, 'limits.maxTransportRetries', /too small.*\(or Infinity for no limit\)/i],
    [
      { maxTransportRetries: 1.5 },
      'limits.maxTransportRetries',
      /^expected a whole number, got 1.5 \(or Infinity for no limit\)$/,
    ],
    [{ maxTransportRetries: '3' }, 'limits.maxTransportRetries', /number/i],
  ])('refuse %o before anything runs, naming the field', (limits, path, message) => {
    expect(issuesOf(limits)).toEqual([{ path, message: expect.stringMatching(message) }]);
  });
});

describe('the deprecated fallback on limits.maxRetries', () => {
  it('gives each call maxRetries + 1 attempts while maxTransportAttempts is not set', () => {
    expect(transportAttemptsOf({ maxRetries: 5 })).toBe(6);
    expect(transportAttemptsOf({ maxRetries: 0 })).toBe(1);
    expect(transportAttemptsOf({ maxRetries: 5, maxTransportAttempts: 2 })).toBe(2);
    expect(transportAttemptsOf(undefined)).toBe(DEFAULT_LIMITS.maxTransportAttempts);
    expect(resolvedLimits({ maxRetries: 4 })).toMatchObject({ maxRetries: 4, maxTransportAttempts: 5 });
  });

  it('warns exactly when dropping the fallback would change the attempts', () => {
    expect(transportAttemptsWarning({ maxRetries: 0 })).toContain(
      'limits.maxRetries (0) now bounds reflection retries only',
    );
    expect(transportAttemptsWarning({ maxRetries: 0 })).toContain('each call gets maxRetries + 1 = 1 attempts');
    expect(transportAttemptsWarning({ maxRetries: DEFAULT_LIMITS.maxTransportAttempts - 1 })).toBeNull();
    expect(transportAttemptsWarning({ maxRetries: 5, maxTransportAttempts: 6 })).toBeNull();
    expect(transportAttemptsWarning({})).toBeNull();
    expect(transportAttemptsWarning(undefined)).toBeNull();
    expect(loopConfigOf(createLoop({ model: model(), limits: { maxRetries: 5 } }))?.deprecations).toHaveLength(1);
  });
});
