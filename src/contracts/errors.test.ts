import { describe, expect, it } from 'vitest';
import { isModelCallError, LoopConfigError, ModelCallError, retryableModelError } from './errors.js';

describe('ModelCallError brand', () => {
  it('recognises this copy, a branded error of another copy and a duck-typed one', () => {
    const foreign = Object.assign(new Error('overloaded'), {
      [Symbol.for('loopstate.ModelCallError')]: true,
      kind: 'server',
    });
    const duck = {
      name: 'ModelCallError',
      kind: 'rate_limited',
      status: 429,
      message: 'slow down',
      retryAfterMs: 1_000,
    };
    for (const error of [new ModelCallError({ kind: 'timeout', message: 't' }), foreign, duck]) {
      expect(isModelCallError(error)).toBe(true);
      expect(ModelCallError.is(error)).toBe(true);
    }
    expect(retryableModelError(duck)).toEqual({
      kind: 'rate_limited',
      message: 'slow down',
      retryAfterMs: 1_000,
      status: 429,
    });
  });

  it('refuses unknown kinds, unbranded errors and hostile objects without throwing', () => {
    expect(isModelCallError({ name: 'ModelCallError', kind: 'weird' })).toBe(false);
    expect(isModelCallError(Object.assign(new Error('x'), { kind: 'server' }))).toBe(false);
    expect(
      isModelCallError(
        new Proxy(
          {},
          {
            get: () => {
              throw new Error('trap');
            },
          },
        ),
      ),
    ).toBe(false);
    expect(retryableModelError({ name: 'ModelCallError', kind: 'auth', message: 'bad key' })).toBeNull();
    expect(
      retryableModelError({ name: 'ModelCallError', kind: 'server', message: 'x', retryAfterMs: NaN })?.retryAfterMs,
    ).toBeUndefined();
  });
});

describe('LoopConfigError scope', () => {
  it('says "Invalid loop config" by default and "Invalid run input" for run input, with one code', () => {
    const issues = [{ path: 'goal', message: 'expected a non-empty goal' }];
    expect(new LoopConfigError({ issues })).toMatchObject({
      scope: 'config',
      code: 'invalid_config',
      message: 'Invalid loop config:\n  - goal: expected a non-empty goal',
    });
    expect(new LoopConfigError({ issues, scope: 'run_input' })).toMatchObject({
      scope: 'run_input',
      code: 'invalid_config',
      message: 'Invalid run input:\n  - goal: expected a non-empty goal',
    });
  });
});
