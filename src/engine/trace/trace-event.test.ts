import { describe, expect, it } from 'vitest';
import { createRedactor } from '../redaction/redact.js';
import { summarize } from './trace-event.js';

describe('summarize', () => {
  it('returns a short string as it is, without JSON quotes', () => {
    expect(summarize('What is the status of order O-101?')).toBe('What is the status of order O-101?');
    expect(summarize('')).toBe('');
    expect(summarize('生成本周技术周报')).toBe('生成本周技术周报');
  });

  it('renders other values as compact JSON', () => {
    expect(summarize({ order_id: 'O-101', quantity: 2, nested: { ok: true } })).toBe(
      '{"order_id":"O-101","quantity":2,"nested":{"ok":true}}',
    );
    expect(summarize([1, 'two', null])).toBe('[1,"two",null]');
    expect(summarize(42)).toBe('42');
    expect(summarize(false)).toBe('false');
    expect(summarize(null)).toBe('null');
  });

  it("renders undefined, and values JSON cannot represent, as 'undefined'", () => {
    expect(summarize(undefined)).toBe('undefined');
    expect(summarize(() => 1)).toBe('undefined');
  });

  it.each([
    'api_key',
    'api-key',
    'apiKey',
    'APIKEY',
    'X-Api-Key',
    'token',
    'access_token',
    'refreshToken',
    'password',
    'passwd',
    'Authorization',
    'cookie',
    'Set-Cookie',
    'client_secret',
    'credentials',
  ])('redacts the value under a %s key and keeps the key', (key) => {
    const summary = summarize({ [key]: 'sk-live-123', user: 'ada' });
    expect(summary).toBe(`{${JSON.stringify(key)}:"[redacted]","user":"ada"}`);
    expect(summary).not.toContain('sk-live-123');
  });

  it('redacts secret-looking keys at any depth, inside arrays too', () => {
    const summary = summarize({
      request: { headers: { authorization: 'Bearer abc' }, retries: [{ auth: { password: 'hunter2' }, attempt: 1 }] },
    });
    expect(summary).toBe(
      '{"request":{"headers":{"authorization":"[redacted]"},"retries":[{"auth":{"password":"[redacted]"},"attempt":1}]}}',
    );
  });

  it('redacts a whole object or array held under a secret-looking key', () => {
    expect(summarize({ credentials: { user: 'ada', pin: 1234 }, tokens: ['a', 'b'] })).toBe(
      '{"credentials":"[redacted]","tokens":"[redacted]"}',
    );
  });

  it('keeps keys that merely look alike but are not secrets', () => {
    const value = { key: 'k', id: 'i', author: 'ada', query: 'q', passage: 'p', order_id: 'O-1' };
    expect(summarize(value)).toBe(JSON.stringify(value));
  });

  it('keeps a text of exactly 200 characters whole', () => {
    const text = 'a'.repeat(200);
    expect(summarize(text)).toBe(text);
  });

  it('cuts a longer text to 200 characters and notes its full length', () => {
    const text = `${'a'.repeat(200)}bcdef`;
    expect(summarize(text)).toBe(`${'a'.repeat(200)}…(205 chars)`);
  });

  it("cuts a long object's JSON after redacting, counting the redacted length", () => {
    const value = { password: 'p'.repeat(500), list: Array.from({ length: 100 }, (_, index) => index) };
    const json = JSON.stringify({ password: '[redacted]', list: value.list });
    const summary = summarize(value);
    expect(summary).toBe(`${json.slice(0, 200)}…(${json.length} chars)`);
    expect(summary).not.toContain('ppp');
  });
});

describe('summarize: what is and is not a secret', () => {
  it('keeps token counters and tokenizer names, redacts real credentials', () => {
    expect(
      summarize({ maxTokens: 10, inputTokens: 5, tokenizer: 'cl100k', accessToken: 'abc', 'x-api-key': 'k' }),
    ).toBe('{"maxTokens":10,"inputTokens":5,"tokenizer":"cl100k","accessToken":"[redacted]","x-api-key":"[redacted]"}');
  });

  it('redacts secrets inside raw text such as malformed tool arguments', () => {
    expect(summarize('{"query":"x","api_key": "sk-live-123",')).toBe('{"query":"x","api_key": "[redacted]",');
    expect(summarize('{"password":"hunter2')).toBe('{"password":"[redacted]"');
  });

  it('never throws: bigints become strings, circular values a type tag', () => {
    expect(summarize({ big: 10n })).toBe('{"big":"10"}');
    expect(summarize(10n)).toBe('"10"');
    const circular: Record<string, unknown> = {};
    circular.self = circular;
    expect(summarize(circular)).toBe('[object Object]');
  });

  it('does not cut a surrogate pair in half', () => {
    const text = `${'a'.repeat(199)}😀${'b'.repeat(50)}`;
    const summary = summarize(text);
    expect(summary.startsWith(`${'a'.repeat(199)}…`)).toBe(true);
    expect(summary).not.toMatch(/[\uD800-\uDBFF](?![\uDC00-\uDFFF])/);
  });
});

describe('summarize: one redaction for keys and values', () => {
  it.each([
    'aws_secret_access_key',
    'secretAccessKey',
    'passphrase',
    'jwt',
    'connectionString',
    'private_key',
    'sessionId',
  ])('redacts the value under %s, which used to appear verbatim', (key) => {
    expect(summarize({ [key]: 'v4lue-0f-a-secret', region: 'eu' })).toBe(
      `{${JSON.stringify(key)}:"[redacted]","region":"eu"}`,
    );
  });

  it('redacts secret-looking values under harmless keys and in plain text', () => {
    expect(summarize({ note: 'use Bearer sk-live-abc123def456' })).toBe('{"note":"use Bearer [redacted]"}');
    expect(summarize('call https://api.example.com/v1?api_key=abc123&q=shoes')).toBe(
      'call https://api.example.com/v1?api_key=[redacted]&q=shoes',
    );
  });

  it('recognises a secret that straddles the cut, so no part of it is shown', () => {
    const secret = 'sk-live-0123456789abcdefghij';
    const text = `${'a '.repeat(90)}key ${secret} ${'b'.repeat(300)}`;
    const summary = summarize(text);
    expect(summary).not.toContain('sk-live-01');
    expect(summary).toContain('key [redacted]');
    expect(summary).toMatch(/…\(\d+ chars\)$/);
  });

  it("applies the loop's own rules when given its redactor", () => {
    const redactor = createRedactor({ keys: ['customer_ssn'], patterns: [/\bCARD-\d{4}\b/] });
    expect(summarize({ customer_ssn: '078-05-1120', note: 'CARD-4111' }, redactor)).toBe(
      '{"customer_ssn":"[redacted]","note":"[redacted]"}',
    );
    expect(summarize({ customer_ssn: '078-05-1120' })).toBe('{"customer_ssn":"078-05-1120"}');
  });
});
