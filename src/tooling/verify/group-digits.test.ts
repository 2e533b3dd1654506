import { describe, expect, it } from 'vitest';
import { groupDigits } from './group-digits.js';

describe('groupDigits', () => {
  it('writes whole numbers as toLocaleString("en-US") does', () => {
    const values = [0, 1, 9, 10, 99, 100, 999, 1_000, 1_001, 12_345, 123_456, 1_234_567, 150_000, 1_000_000];
    values.push(Number.MAX_SAFE_INTEGER, Number.MIN_SAFE_INTEGER);
    for (let power = 1; power < 2 ** 53; power *= 7) values.push(power, power - 1, -power, -(power + 1));
    for (const value of values) expect(groupDigits(value), String(value)).toBe(value.toLocaleString('en-US'));
    expect(groupDigits(1_234_567)).toBe('1,234,567');
    expect(groupDigits(-1_000)).toBe('-1,000');
  });

  it('leaves every other number to toLocaleString', () => {
    for (const value of [0.5, 1234.5678, -0, Number.POSITIVE_INFINITY, Number.NEGATIVE_INFINITY, Number.NaN, 2 ** 60])
      expect(groupDigits(value), String(value)).toBe(value.toLocaleString('en-US'));
  });
});
