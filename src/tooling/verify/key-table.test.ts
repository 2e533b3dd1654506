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

/** Parts that make a key long enough to outgrow the table's room for parts. */
const FILLER = Array.from({ length: 14 }, (_, index) => index);

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

  it('tells the empty string apart from every other part, wherever it comes (it has a code of its own)', () => {
    const keys = table();
    keys.insert(['', 'a', ''], 1);
    keys.insert([-1, 'a', ''], 2);
    keys.insert(['x', 'a', ''], 3);
    keys.insert(['a', '', ''], 4);
    expect(keys.find(['', 'a', ''])).toBe(1);
    expect(keys.find([-1, 'a', ''])).toBe(2);
    expect(keys.find(['x', 'a', ''])).toBe(3);
    expect(keys.find(['a', '', ''])).toBe(4);
    expect(keys.find([0, 'a', ''])).toBe(-1);
    expect(keys.find(['', 'a', ' '])).toBe(-1);
  });

  it('keeps every state as it grows past its first arrays', () => {
    const keys = table();
    // Past the room made at the start for entries (32,768), slots and parts (2^20): 70,000 keys of 17 parts.
    const parts = (state: number) => [`s${state % 7}`, state, state % 3 === 0 ? '' : -state, ...FILLER];
    for (let state = 0; state < 70_000; state += 1) keys.insert(parts(state), state);
    for (let state = 0; state < 70_000; state += 1) expect(keys.find(parts(state))).toBe(state);
    expect(keys.find(['s0', 70_000, '', ...FILLER])).toBe(-1);
  });

  it('takes the parts one by one as it takes them in an array', () => {
    const keys = new KeyTable();
    keys.encode(['RUNNING', 3, '', 0.25, 'calls']);
    keys.insert(4);
    keys.begin();
    for (const part of ['RUNNING', 3, '', 0.25, 'calls']) keys.add(part);
    keys.end();
    expect(keys.find()).toBe(4);
    keys.begin();
    for (const part of ['RUNNING', 3, '', 0.25]) keys.add(part);
    keys.end();
    expect(keys.find()).toBe(-1);
  });

  it('names a state value by number or by text, apart, so the joined key decides between them', () => {
    const keys = new KeyTable();
    const withValue = (valueKey: string, valueId: number | undefined) => {
      keys.begin();
      keys.addValue(valueKey, valueId);
      keys.add(1);
      keys.end();
    };
    withValue('{"RUNNING":"acting"}', 7);
    keys.insert(2);
    withValue('{"RUNNING":"acting"}', 7);
    expect(keys.find()).toBe(2);
    // The same value by its text is another encoding: a miss, never a wrong hit.
    withValue('{"RUNNING":"acting"}', undefined);
    expect(keys.find()).toBe(-1);
    withValue('{"RUNNING":"deciding"}', 8);
    expect(keys.find()).toBe(-1);
  });

  it('tells apart more strings at one position than it remembers there', () => {
    const keys = table();
    // Nine strings taking turns at position 0, past the few remembered per position: each keeps its own number.
    const names = Array.from({ length: 9 }, (_, index) => `state ${index}`);
    names.forEach((name, state) => keys.insert([name, 0, 'x'], state));
    for (let round = 0; round < 3; round += 1)
      for (const [state, name] of names.entries()) expect(keys.find([name, 0, 'x'])).toBe(state);
    expect(keys.find(['state 9', 0, 'x'])).toBe(-1);
  });

  it('keeps a key with more parts than its first scratch array', () => {
    const keys = table();
    const long = Array.from({ length: 200 }, (_, index) => (index % 2 === 0 ? index : `p${index}`));
    keys.insert(long, 3);
    expect(keys.find(long)).toBe(3);
    expect(keys.find([...long.slice(0, 199), 'other'])).toBe(-1);
  });
});
