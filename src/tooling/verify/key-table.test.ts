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

  it('encodes a part by its text as the joined key shows it: 5 and "5", -0 and 0, null and "" are one part', () => {
    const keys = table();
    keys.insert(['a', 5, 0, ''], 1);
    expect(keys.find(['a', '5', 0, ''])).toBe(1);
    expect(keys.find(['a', 5, -0, ''])).toBe(1);
    expect(keys.find(['a', 5, '0', null as unknown as string])).toBe(1);
    expect(keys.find(['a', 5, 0, undefined as unknown as string])).toBe(1);
    // Texts that are not how JavaScript writes the number are other parts.
    for (const other of ['05', '5.0', ' 5', '+5', '-0', 'NaN']) expect(keys.find(['a', other, 0, ''])).toBe(-1);
    keys.insert(['b', 1e21, 0.1, Infinity, NaN, -3], 2);
    expect(keys.find(['b', '1e+21', '0.1', 'Infinity', 'NaN', '-3'])).toBe(2);
    expect(keys.find(['b', '1e21', 0.1, Infinity, NaN, -3])).toBe(-1);
  });

  it('joins an entry back to the key Array.prototype.join makes of its parts', () => {
    const keys = new KeyTable();
    const cases: unknown[][] = [
      ['READY', 0, '', -0, 0.25, -1.5, 1e21, 1e-7, Infinity, -Infinity, NaN, null, undefined, '5', '05', 'a b', true],
      [''],
      ['done:stopped'],
      [3, '', ''],
    ];
    for (const parts of cases) {
      keys.encode(parts as Array<string | number>);
      expect(keys.keyOf(keys.insert(7))).toBe(parts.join('|'));
    }
    expect(keys.exact).toBe(true);
  });

  it('names a key with a part that holds "|" by its joined key, which two encodings may share', () => {
    const keys = table();
    const plain = Array.from({ length: 300 }, (_, state) => [`s${state}`, state, 'x']);
    plain.forEach((parts, state) => keys.insert(parts, state));
    // 'a|b', 'c' and 'a', 'b|c' join alike: one key, so one state, whichever encoding came first.
    keys.insert(['a|b', 'c', 1], 400);
    expect(keys.find(['a', 'b|c', 1])).toBe(400);
    expect(keys.find(['a', 'b', 'c', 1])).toBe(400);
    expect(keys.find(['a|b|c', 1])).toBe(400);
    expect(keys.find(['a', 'b|c', 2])).toBe(-1);
    // A key made before the table held "|" is found by a later encoding that joins to it.
    keys.insert(['p|q', 9], 500);
    expect(keys.find(['s7|7', 'x'])).toBe(7);
    expect(keys.find(['s7', '7|x'])).toBe(7);
    expect(keys.find(['s7', 8, 'x'])).toBe(-1);
    plain.forEach((parts, state) => expect(keys.find(parts)).toBe(state));
  });

  it('is exact until a part with "|" comes', () => {
    const keys = new KeyTable();
    keys.encode(['a', 1, 'b c', '', -2]);
    expect(keys.exact).toBe(true);
    keys.encode(['a', 'x|y']);
    expect(keys.exact).toBe(false);
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

  it('names a state value by number as by its text: one part, whichever way it comes', () => {
    const keys = new KeyTable();
    const withValue = (valueKey: string, valueId: number | undefined) => {
      keys.begin();
      keys.addValue(valueKey, valueId);
      keys.add(1);
      keys.end();
    };
    withValue('{"RUNNING":"acting"}', 7);
    expect(keys.keyOf(keys.insert(2))).toBe('{"RUNNING":"acting"}|1');
    withValue('{"RUNNING":"acting"}', 7);
    expect(keys.find()).toBe(2);
    withValue('{"RUNNING":"acting"}', undefined);
    expect(keys.find()).toBe(2);
    withValue('{"RUNNING":"deciding"}', 8);
    expect(keys.find()).toBe(-1);
    withValue('"READY"', undefined);
    keys.insert(3);
    withValue('"READY"', 0);
    expect(keys.find()).toBe(3);
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
