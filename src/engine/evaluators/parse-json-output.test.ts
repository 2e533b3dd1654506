import { describe, expect, it } from 'vitest';
import { describeJsonType, parseJsonOutput, unwrapJsonFence } from './parse-json-output.js';

describe('unwrapJsonFence', () => {
  it.each([
    ['```json\n{"a":1}\n```', '{"a":1}'],
    ['```JSON\n{"a":1}\n```', '{"a":1}'],
    ['```\n{"a":1}\n```', '{"a":1}'],
    ['  \n```json\r\n{"a":1}\r\n```\n  ', '{"a":1}'],
    ['```json {"a":1}```', '{"a":1}'],
  ])('unwraps a single fence around the whole text: %j', (text, body) => {
    expect(unwrapJsonFence(text)).toBe(body);
  });

  it.each([
    ['prose before the block', 'Here it is:\n```json\n{"a":1}\n```'],
    ['another language', '```python\n{"a":1}\n```'],
    ['two blocks', '```json\n{"a":1}\n```\n```json\n{"b":2}\n```'],
    ['no closing fence', '```json\n{"a":1}'],
    ['plain JSON', '{"a":1}'],
  ])('leaves the text unchanged with %s', (_label, text) => {
    expect(unwrapJsonFence(text)).toBe(text);
  });
});

describe('parseJsonOutput', () => {
  it('parses plain and fenced JSON', () => {
    expect(parseJsonOutput(' {"a": [1, 2]} ')).toEqual({ ok: true, value: { a: [1, 2] } });
    expect(parseJsonOutput('```json\n{"a": null}\n```')).toEqual({ ok: true, value: { a: null } });
  });

  it('parses a fenced block with prose around it', () => {
    expect(parseJsonOutput('Here is the result:\n```json\n{"total": 3}\n```\nLet me know')).toEqual({
      ok: true,
      value: { total: 3 },
    });
    expect(parseJsonOutput('Sure!\n```\n[1, 2]\n```\nAnything else?')).toEqual({ ok: true, value: [1, 2] });
    expect(parseJsonOutput('Sure! ```json\n{"a":1}\n```')).toEqual({ ok: true, value: { a: 1 } });
  });

  it("reports the fenced body's own parse error, not a guess from the prose", () => {
    const outcome = parseJsonOutput('Here:\n```json\n{"a":}\n```\nand {"b": 2}');
    expect(outcome).toMatchObject({ ok: false, error: expect.stringContaining('Unexpected token') });
  });

  it('refuses two fenced blocks, even when each parses', () => {
    expect(parseJsonOutput('First:\n```json\n{"a":1}\n```\nor:\n```json\n{"b":2}\n```')).toEqual({
      ok: false,
      error: 'found 2 fenced JSON blocks; expected exactly one',
    });
  });

  it('ignores a fence in another language', () => {
    expect(parseJsonOutput('Code:\n```python\nprint({})\n```\nAnswer: {"a": 1}')).toEqual({
      ok: true,
      value: { a: 1 },
    });
  });

  it('parses a single object or array with prose around it and no fence', () => {
    expect(parseJsonOutput('The answer is {"status": "shipped", "note": "box {2}"} as requested.')).toEqual({
      ok: true,
      value: { status: 'shipped', note: 'box {2}' },
    });
    expect(parseJsonOutput('Items: [1, 2, 3].')).toEqual({ ok: true, value: [1, 2, 3] });
  });

  it('refuses two different JSON values in prose, naming both', () => {
    expect(parseJsonOutput('Either {"a": 1} or {"b": 2}')).toEqual({
      ok: false,
      error: 'found 2 JSON values in the text ("{\\"a\\": 1}", "{\\"b\\": 2}"); expected exactly one',
    });
  });

  it('reports the JSON.parse message on failure', () => {
    const outcome = parseJsonOutput('{"a":}');
    expect(outcome.ok).toBe(false);
    expect(outcome).toMatchObject({ error: expect.stringContaining('Unexpected token') });
    expect(parseJsonOutput('')).toEqual({ ok: false, error: 'Unexpected end of JSON input' });
  });
});

describe('describeJsonType', () => {
  it('names null and arrays apart from objects', () => {
    expect([null, [], {}, 'x', 1, true].map(describeJsonType)).toEqual([
      'null',
      'array',
      'object',
      'string',
      'number',
      'boolean',
    ]);
  });
});
