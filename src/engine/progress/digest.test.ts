import { hash } from 'node:crypto';
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { digest64, legacySha1 } from './digest.js';

describe('digest64', () => {
  it('gives 16 hex characters, the same for the same text', () => {
    expect(digest64('lookup:{"order_id":"O-1"}')).toMatch(/^[0-9a-f]{16}$/);
    expect(digest64('lookup:{"order_id":"O-1"}')).toBe(digest64('lookup:{"order_id":"O-1"}'));
  });

  it('is pinned: a run journalled today resumes with the same digests tomorrow', () => {
    // Changing these values breaks the no-progress counts of every run journalled before the change.
    expect(['', 'a', 'lookup:{"order_id":"O-7"}', 'é🙂'].map(digest64)).toEqual([
      '488bdcb81aee8d83',
      '501c2ba782c97901',
      '2b89a5da2e03a81a',
      '82177f58f5d2a4bc',
    ]);
  });

  it('tells apart texts that differ in one character, its place or a trailing NUL', () => {
    const texts = ['ab', 'ba', 'a', 'a\u0000', 'b', '{"a":1}', '{"a":2}', '{"a":1 }'];
    expect(new Set(texts.map(digest64)).size).toBe(texts.length);
  });

  it('has no collision among 100,000 distinct short texts', () => {
    const digests = new Set<string>();
    for (let index = 0; index < 100_000; index++) digests.add(digest64(`lookup:{"order_id":"O-${index}"}`));
    expect(digests.size).toBe(100_000);
  });
});

describe('legacySha1', () => {
  it("is node:crypto's sha1 of the UTF-8 bytes, for any text (astral, lone surrogates and block edges included)", () => {
    for (const length of [0, 1, 55, 56, 63, 64, 65, 119, 120, 1000])
      expect(legacySha1('x'.repeat(length))).toBe(hash('sha1', 'x'.repeat(length), 'hex'));
    fc.assert(
      fc.property(
        fc.string({ unit: 'binary', maxLength: 300 }),
        (text) => legacySha1(text) === hash('sha1', text, 'hex'),
      ),
      { numRuns: 300 },
    );
  });
});
