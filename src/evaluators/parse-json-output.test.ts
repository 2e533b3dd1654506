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

  it('reports the JSON.parse message on failure', () => {
    const outcome = parseJsonOutput('{"a":}');
    expect(outcome.ok).toBe(false);
    expect(outcome).toMatchObject({ error: expect.stringContaining('Unexpected token') });
    expect(parseJsonOutput('')).toEqual({ ok: false, error: 'Unexpected end of JSON input' });
  });
});

describe('describeJsonType', () => {
  it('names null and arrays apart from objects', () => {
    expect([null, [], {}, 'x', 1, true].map(describeJsonType)).toEqual(['null', 'array', 'object', 'string', 'number', 'boolean']);
  });
});
