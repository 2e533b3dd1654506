import { describe, expect, it } from 'vitest';
import { MAX_MEMO_TEXT_CHARS, MAX_MEMO_TEXTS, memoiseText } from './text-memo.js';

function counted() {
  const inputs: string[] = [];
  const text = memoiseText((input) => {
    inputs.push(input);
    return input.replaceAll('secret', '[redacted]');
  });
  return { text, inputs };
}

describe('memoiseText', () => {
  it('runs the transform once for a short text seen again, and answers the same', () => {
    const { text, inputs } = counted();
    expect(text('main secret')).toBe('main [redacted]');
    expect(text('lookup')).toBe('lookup');
    expect(text('main secret')).toBe('main [redacted]');
    expect(text('lookup')).toBe('lookup');
    expect(inputs).toEqual(['main secret', 'lookup']);
  });

  it('passes a long text straight through every time', () => {
    const { text, inputs } = counted();
    const long = `${'x'.repeat(MAX_MEMO_TEXT_CHARS)} secret`;
    expect(text(long)).toBe(`${'x'.repeat(MAX_MEMO_TEXT_CHARS)} [redacted]`);
    expect(text(long)).toBe(`${'x'.repeat(MAX_MEMO_TEXT_CHARS)} [redacted]`);
    expect(inputs).toHaveLength(2);
    const edge = 'y'.repeat(MAX_MEMO_TEXT_CHARS);
    text(edge);
    text(edge);
    expect(inputs).toHaveLength(3);
  });

  it('starts again when full, and still answers right for what it forgot', () => {
    const { text, inputs } = counted();
    for (let index = 0; index < MAX_MEMO_TEXTS; index += 1) text(`id ${index}`);
    expect(inputs).toHaveLength(MAX_MEMO_TEXTS);
    text('id 0');
    expect(inputs).toHaveLength(MAX_MEMO_TEXTS);
    // One more fills it: the table is emptied and the new text kept alone.
    text('one more secret');
    expect(text('id 0')).toBe('id 0');
    expect(inputs).toHaveLength(MAX_MEMO_TEXTS + 2);
    expect(text('one more secret')).toBe('one more [redacted]');
    expect(inputs).toHaveLength(MAX_MEMO_TEXTS + 2);
  });
});
