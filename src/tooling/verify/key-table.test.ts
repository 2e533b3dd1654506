import { describe, expect, it } from 'vitest';
import { KeyTable } from './key-table.js';

function table() {
  const keys = new KeyTable();
  return {
    find(parts: Array<string | number>) {
      keys.encode(parts);
      return keys.find();
    },
    insert(parts: Array<string | number>, state: number) {
      keys.encode(parts);
      keys.insert(state);
    },
  };
}

describe('KeyTable', () => {
  it('finds a state by the parts it was inserted with, and only by them', () => {
    const keys = table();
    keys.insert(['RUNNING', 3, '', 0.25, 'calls'], 7);
    expect(keys.find(['RUNNING', 3, '', 0.25, 'calls'])).toBe(7);
    expect(keys.find(['RUNNING', 3, '', 0.25, 'text'])).toBe(-1);
    expect(keys.find(['RUNNING', 3, '', 0.25])).toBe(-1);
    expect(keys.find(['RUNNING', 4, '', 0.25, 'calls'])).toBe(-1);
  });

  it('misses encodings that join to the same key, so the caller names them by the joined key', () => {
    const keys = table();
    keys.insert(['a', 5, 0], 1);
    // '5' and 5, -0 and 0 join alike but encode apart: never a wrong hit, only a miss.
    expect(keys.find(['a', '5', 0])).toBe(-1);
    expect(keys.find(['a', 5, -0])).toBe(-1);
    keys.insert(['a', '5', 0], 1);
    expect(keys.find(['a', '5', 0])).toBe(1);
    expect(keys.find(['a', 5, 0])).toBe(1);
  });

  it('keeps every state as it grows past its first arrays', () => {
    const keys = table();
    for (let state = 0; state < 20_000; state += 1)
      keys.insert([`s${state % 7}`, state, state % 3 === 0 ? '' : -state], state);
    for (let state = 0; state < 20_000; state += 1)
      expect(keys.find([`s${state % 7}`, state, state % 3 === 0 ? '' : -state])).toBe(state);
    expect(keys.find(['s0', 20_000, ''])).toBe(-1);
  });
});
