import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { canonicalJson } from './canonical-json.js';

/** Rebuilds a JSON value with every object's keys in reverse insertion order. */
function reverseKeys(value: unknown): unknown {
  if (Array.isArray(value)) return value.map(reverseKeys);
  if (typeof value === 'object' && value !== null) {
    return Object.fromEntries(
      Object.entries(value)
        .reverse()
        .map(([key, item]) => [key, reverseKeys(item)]),
    );
  }
  return value;
}

describe('canonicalJson', () => {
  it('sorts object keys recursively, including inside arrays', () => {
    expect(canonicalJson({ b: 1, a: { d: [{ z: 1, y: 2 }], c: null } })).toBe(
      '{"a":{"c":null,"d":[{"y":2,"z":1}]},"b":1}',
    );
  });

  it('keeps array order, which is meaningful', () => {
    expect(canonicalJson([2, 1])).not.toBe(canonicalJson([1, 2]));
  });

  it('drops undefined properties and turns undefined array items into null, like JSON.stringify', () => {
    expect(canonicalJson({ a: undefined, b: () => 1, c: Symbol('s'), d: 1 })).toBe('{"d":1}');
    expect(canonicalJson([undefined, () => 1])).toBe('[null,null]');
    expect(canonicalJson(undefined)).toBe('null');
  });

  it('escapes strings exactly like JSON.stringify, unicode included', () => {
    const text = 'é 日本 😀 "quoted" \n\t \u0000 \ud800';
    expect(canonicalJson({ text })).toBe(`{"text":${JSON.stringify(text)}}`);
    expect(canonicalJson({ ключ: 1, 'a"b': 2 })).toBe('{"a\\"b":2,"ключ":1}');
  });

  it('writes non-finite numbers as null and -0 as 0', () => {
    expect(canonicalJson([Number.NaN, Number.POSITIVE_INFINITY, -0, 1.5e-7])).toBe('[null,null,0,1.5e-7]');
  });

  it('honours toJSON and unwraps boxed primitives', () => {
    expect(canonicalJson({ when: new Date(Date.UTC(2024, 0, 2)) })).toBe('{"when":"2024-01-02T00:00:00.000Z"}');
    expect(canonicalJson([Object(1), Object('s'), Object(false)])).toBe('[1,"s",false]');
  });

  it('allows the same object twice but throws on a cycle or a bigint', () => {
    const shared = { x: 1 };
    expect(canonicalJson({ a: shared, b: shared })).toBe('{"a":{"x":1},"b":{"x":1}}');
    const cyclic: Record<string, unknown> = {};
    cyclic.self = cyclic;
    expect(() => canonicalJson(cyclic)).toThrow(/circular/);
    expect(() => canonicalJson({ n: 1n })).toThrow(TypeError);
  });

  it('is valid JSON that parses back to the same value as JSON.stringify would (property)', () => {
    fc.assert(
      fc.property(fc.jsonValue(), (value) => {
        expect(JSON.parse(canonicalJson(value))).toEqual(JSON.parse(JSON.stringify(value)));
      }),
    );
  });

  it('gives the same text whatever the key order (property)', () => {
    fc.assert(
      fc.property(fc.jsonValue(), (value) => {
        expect(canonicalJson(reverseKeys(value))).toBe(canonicalJson(value));
      }),
    );
  });
});
