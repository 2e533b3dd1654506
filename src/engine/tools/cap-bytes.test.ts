import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { TRUNCATION_MARKER } from '../prompts.js';
import { capBytes, utf8Length } from './cap-bytes.js';

describe('capBytes', () => {
  it('documents its own example', () => {
    expect(capBytes('é'.repeat(50), 65)).toEqual({
      content: `ééé${TRUNCATION_MARKER(6, 100)}`,
      truncated: true,
      bytes: 100,
    });
  });

  it('never splits a multi-byte character', () => {
    // Totals here have three digits, so the marker's reserved size is that of a three-digit marker.
    const room = 150 - Buffer.byteLength(TRUNCATION_MARKER(100, 100));
    // Each text puts the byte limit inside a 2-, 3- or 4-byte character.
    const cases: Array<[text: string, keptBytes: number]> = [
      [`${'a'.repeat(room - 1)}${'é'.repeat(60)}`, room - 1],
      [`${'a'.repeat(room - 2)}${'€'.repeat(40)}`, room - 2],
      [`${'a'.repeat(room - 1)}${'😀'.repeat(30)}`, room - 1],
      [`${'a'.repeat(room - 3)}${'😀'.repeat(30)}`, room - 3],
    ];
    for (const [text, keptBytes] of cases) {
      const total = Buffer.byteLength(text);
      const capped = capBytes(text, 150);
      const kept = capped.content.slice(0, capped.content.indexOf('\n[loopstate'));
      expect(capped).toMatchObject({ truncated: true, bytes: total });
      expect(Buffer.byteLength(kept)).toBe(keptBytes);
      expect(kept).not.toContain('\uFFFD');
      expect(text.startsWith(kept)).toBe(true);
      expect(capped.content).toBe(kept + TRUNCATION_MARKER(keptBytes, total));
      expect(Buffer.byteLength(capped.content)).toBeLessThanOrEqual(150);
    }
  });

  it('leaves a result at exactly the limit untouched', () => {
    expect(capBytes('€€', 6)).toEqual({ content: '€€', truncated: false, bytes: 6 });
    expect(capBytes('€€', 5)).toMatchObject({ truncated: true, bytes: 6 });
  });

  it('keeps the marker even when the limit is smaller than the marker', () => {
    expect(capBytes('abcdef', 3)).toEqual({ content: TRUNCATION_MARKER(0, 6), truncated: true, bytes: 6 });
  });

  it('always yields a prefix of the text plus the marker, within the limit when the marker fits (property)', () => {
    fc.assert(
      fc.property(
        fc.string({ unit: 'grapheme', maxLength: 200 }),
        fc.integer({ min: 0, max: 400 }),
        (text, maxBytes) => {
          const total = Buffer.byteLength(text);
          const capped = capBytes(text, maxBytes);
          expect(capped.bytes).toBe(total);
          if (total <= maxBytes) {
            expect(capped).toEqual({ content: text, truncated: false, bytes: total });
            return;
          }
          const markerAt = capped.content.lastIndexOf('\n[loopstate: tool result truncated');
          const kept = capped.content.slice(0, markerAt);
          expect(text.startsWith(kept)).toBe(true);
          expect(capped.content.slice(markerAt)).toBe(TRUNCATION_MARKER(Buffer.byteLength(kept), total));
          if (maxBytes >= Buffer.byteLength(TRUNCATION_MARKER(total, total)))
            expect(Buffer.byteLength(capped.content)).toBeLessThanOrEqual(maxBytes);
        },
      ),
    );
  });
});

describe('utf8Length', () => {
  it("is Buffer.byteLength's count for any text: astral characters, lone surrogates included", () => {
    expect(utf8Length('é🙂')).toBe(6);
    fc.assert(
      fc.property(
        fc.string({ unit: 'binary', maxLength: 200 }),
        (text) => utf8Length(text) === Buffer.byteLength(text, 'utf8'),
      ),
      { numRuns: 500 },
    );
  });
});
