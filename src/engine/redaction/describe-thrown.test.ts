import { describe, expect, it } from 'vitest';
import { ModelCallError } from '../../contracts/errors.js';
import { describeThrown, errorFields, thrownMessage, toError } from './describe-thrown.js';

class Problem {
  constructor(readonly code: number) {}
}

const throwingGetters = Object.defineProperty({}, 'message', {
  get() {
    throw new Error('no message for you');
  },
});
const errorWithThrowingMessage = Object.defineProperty(new Error('hidden'), 'message', {
  get() {
    throw new Error('getter exploded');
  },
});
const hostileProxy = new Proxy(
  {},
  {
    get() {
      throw new Error('trap');
    },
    getPrototypeOf() {
      throw new Error('trap');
    },
    ownKeys() {
      throw new Error('trap');
    },
  },
);
const circular: Record<string, unknown> = { id: 1 };
circular.self = circular;

describe('describeThrown', () => {
  it.each<[string, unknown, string]>([
    ['an Error', new Error('disk full'), 'Error: disk full'],
    ['an Error subclass', new TypeError('x is not a function'), 'TypeError: x is not a function'],
    ['a library error', new ModelCallError({ kind: 'auth', message: 'bad key' }), 'ModelCallError: bad key'],
    ['an Error without a message', new RangeError(), 'RangeError'],
    ['a string', 'quota exceeded', 'quota exceeded'],
    ['an empty string', '', 'an empty string was thrown'],
    ['undefined', undefined, 'undefined was thrown'],
    ['null', null, 'null was thrown'],
    ['a number', 42, '42 was thrown'],
    ['NaN', Number.NaN, 'NaN was thrown'],
    ['a boolean', false, 'false was thrown'],
    ['a bigint', 10n, '10n was thrown'],
    ['a symbol', Symbol('stop'), 'Symbol(stop) was thrown'],
    ['a named function', function cleanup() {}, 'the function cleanup was thrown'],
    ['a plain object', { code: 'E42' }, 'an object was thrown: {"code":"E42"}'],
    ['an object with bigints', { id: 7n }, 'an object was thrown: {"id":"7n"}'],
    ['an array', [1, 'two'], 'an array was thrown: [1,"two"]'],
    ['a class instance', new Problem(7), 'a Problem was thrown: {"code":7}'],
    [
      'an error-like object from another copy of a library',
      { name: 'AbortError', message: 'aborted' },
      'AbortError: aborted',
    ],
    ['an object with its own toString', { toString: () => 'custom failure' }, 'custom failure'],
    [
      'an object whose toString throws',
      {
        toString: () => {
          throw new Error('no');
        },
      },
      'an object was thrown: {}',
    ],
    ['an object whose message getter throws', throwingGetters, 'an object was thrown: {}'],
    ['an Error whose message getter throws', errorWithThrowingMessage, 'Error (its message could not be read)'],
    ['a circular object', circular, 'an object was thrown (it could not be described)'],
    ['a Proxy whose every trap throws', hostileProxy, 'an object was thrown (it could not be described)'],
  ])('describes %s', (_label, value, expected) => {
    expect(describeThrown(value)).toBe(expected);
  });

  it('never says only "undefined" or "[object Object]"', () => {
    for (const value of [undefined, {}, Object.create(null), hostileProxy]) {
      const text = describeThrown(value);
      expect(text).not.toBe('undefined');
      expect(text).not.toContain('[object Object]');
    }
  });

  it('cuts the description of a huge thrown object', () => {
    const text = describeThrown({ body: 'x'.repeat(10_000) });
    expect(text.length).toBeLessThan(600);
    expect(text).toMatch(/…\(\d+ chars\)$/);
  });
});

describe('thrownMessage', () => {
  it("gives an Error's message alone, its name when the message is empty", () => {
    expect(thrownMessage(new Error('disk full'))).toBe('disk full');
    expect(thrownMessage(new TypeError(''))).toBe('TypeError');
  });

  it('describes everything else', () => {
    expect(thrownMessage(undefined)).toBe('undefined was thrown');
    expect(thrownMessage('plain')).toBe('plain');
    expect(thrownMessage({ code: 1 })).toBe('an object was thrown: {"code":1}');
    expect(thrownMessage(errorWithThrowingMessage)).toBe('Error (its message could not be read)');
  });
});

describe('toError', () => {
  it('keeps an Error as it is', () => {
    const error = new TypeError('x');
    expect(toError(error)).toBe(error);
  });

  it('wraps anything else, keeping the value as the cause', () => {
    const wrapped = toError(undefined);
    expect(wrapped).toBeInstanceOf(Error);
    expect(wrapped.message).toBe('undefined was thrown');
    const value = { code: 7 };
    expect(toError(value).cause).toBe(value);
  });
});

describe('errorFields', () => {
  it('reads name, message and a string code', () => {
    expect(errorFields(new ModelCallError({ kind: 'auth', message: 'bad key' }))).toEqual({
      name: 'ModelCallError',
      message: 'bad key',
      code: 'model_auth',
    });
    expect(errorFields(new Error('plain'))).toEqual({ name: 'Error', message: 'plain' });
  });

  it('never throws on hostile getters', () => {
    expect(errorFields(errorWithThrowingMessage)).toEqual({
      name: 'Error',
      message: 'Error (its message could not be read)',
    });
  });
});
