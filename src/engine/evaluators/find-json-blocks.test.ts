import { describe, expect, it } from 'vitest';
import { findJsonBlocks, findJsonFences, withoutFences } from './find-json-blocks.js';

describe('findJsonFences', () => {
  it('returns the bodies of json and bare fences, skipping other languages', () => {
    const text = 'a\n```json\n{"a":1}\n```\nb\n```python\nprint(1)\n```\n```\n[2]\n```';
    expect(findJsonFences(text)).toEqual(['{"a":1}', '[2]']);
  });

  it('finds no fence in plain text or an unclosed fence', () => {
    expect(findJsonFences('{"a":1}')).toEqual([]);
    expect(findJsonFences('```json\n{"a":1}')).toEqual([]);
  });
});

describe('withoutFences', () => {
  it('blanks fenced code of any language, keeping positions and the text around it', () => {
    const text = 'a\n```py\nx = {}\n```\nb {"c": 1}';
    const blanked = withoutFences(text);
    expect(blanked).toHaveLength(text.length);
    expect(blanked.replace(/\s+/g, ' ')).toBe('a b {"c": 1}');
  });
});

describe('findJsonBlocks', () => {
  it('finds one object in prose, with its position', () => {
    expect(findJsonBlocks('Total: {"total": 3}. Thanks')).toEqual([
      { start: 7, text: '{"total": 3}', value: { total: 3 } },
    ]);
  });

  it('skips braces and brackets inside JSON strings', () => {
    const text = 'Result: {"note": "use } and ] and {", "n": [1, {"x": "]"}]} done';
    expect(findJsonBlocks(text).map((block) => block.value)).toEqual([
      { note: 'use } and ] and {', n: [1, { x: ']' }] },
    ]);
  });

  it('honours escaped quotes inside strings', () => {
    expect(findJsonBlocks('x {"q": "a \\"}\\" b"} y')[0]?.value).toEqual({ q: 'a "}" b' });
  });

  it('ignores prose braces that do not parse and looks inside them', () => {
    expect(findJsonBlocks('I {really} think {"a": 1} fits').map((block) => block.text)).toEqual(['{"a": 1}']);
    expect(findJsonBlocks('{note: {"a": 1}}').map((block) => block.text)).toEqual(['{"a": 1}']);
  });

  it('does not report blocks nested in a parsing block, and reports separate ones', () => {
    expect(findJsonBlocks('{"a": {"b": [1]}}')).toHaveLength(1);
    expect(findJsonBlocks('{"a": 1} and [2]').map((block) => block.text)).toEqual(['{"a": 1}', '[2]']);
  });

  it('finds nothing in unbalanced or mismatched text', () => {
    expect(findJsonBlocks('{"a": 1')).toEqual([]);
    expect(findJsonBlocks('{"a": [1}]')).toEqual([]);
  });

  // No timed assertion (timings flake on shared machines): a scan quadratic in the brackets would take
  // minutes on this input and hit the test's own timeout.
  it('stays linear on prose full of unclosed brackets', () => {
    const text = `${'{'.repeat(100_000)}{"a":1}`;
    expect(findJsonBlocks(text)).toEqual([]);
  });
});
