import { describe, expect, it } from 'vitest';
import { tooDeepAt } from './nesting-depth.js';

/** `levels` nested arrays, built as text: JSON.stringify itself overflows long before 100,000. */
const nestedArrays = (levels: number): unknown => JSON.parse(`${'['.repeat(levels)}${']'.repeat(levels)}`);

describe('tooDeepAt', () => {
  it('accepts data exactly as deep as the bound and names the first value one level deeper', () => {
    expect(tooDeepAt({ a: [[1]] }, 3)).toBeNull();
    expect(tooDeepAt({ a: [[1]] }, 2)).toBe('a[0]');
    expect(tooDeepAt([[]], 1)).toBe('[0]');
    expect(tooDeepAt('text', 0)).toBeNull();
    expect(tooDeepAt({}, 0)).toBe('(top level)');
  });

  it('names the first too-deep field in file order, quoting keys that are not identifiers', () => {
    const data = { shallow: { x: 1 }, 'odd key': [{ deep: {} }], later: [[[[]]]] };
    expect(tooDeepAt(data, 3)).toBe('["odd key"][0].deep');
  });

  it('walks 100,000 levels without overflowing the stack, and shortens the path it names', () => {
    expect(tooDeepAt(nestedArrays(100_000), 100_000)).toBeNull();
    expect(tooDeepAt({ messages: [{ nested: nestedArrays(100_000) }] }, 256)).toBe('messages[0].nested[0][0][0]…');
  });
});
