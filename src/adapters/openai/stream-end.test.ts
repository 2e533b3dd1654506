import { describe, expect, it } from 'vitest';
import { DoneLineFinder } from './stream-end.js';

const bytes = (text: string) => new TextEncoder().encode(text);

describe('DoneLineFinder', () => {
  it('sees a [DONE] line once it ends, with or without the space, split anywhere', () => {
    expect(new DoneLineFinder().sawDone(bytes('data: [DONE]\n\n'))).toBe(true);
    expect(new DoneLineFinder().sawDone(bytes('data:[DONE]\r\n'))).toBe(true);
    const split = new DoneLineFinder();
    expect(split.sawDone(bytes('data: {"x":1}\n\nda'))).toBe(false);
    expect(split.sawDone(bytes('ta: [DO'))).toBe(false);
    expect(split.sawDone(bytes('NE]'))).toBe(false);
    expect(split.sawDone(bytes('\n'))).toBe(true);
  });

  it('never mistakes [DONE] inside an event for the end', () => {
    const finder = new DoneLineFinder();
    expect(finder.sawDone(bytes('data: {"content":"data: [DONE]"}\n\n'))).toBe(false);
    expect(finder.sawDone(bytes(': data: [DONE]\n\nevent: data: [DONE]\n'))).toBe(false);
  });
});
