import { describe, expect, it } from 'vitest';
import { createRedactor, DEFAULT_REDACTOR } from '../../engine/redaction/redact.js';
import type { ModelRequest } from '../../contracts/model.js';
import { cassetteRequest, redactPlainData, requestKey } from './request-key.js';

const request = (extra: Record<string, unknown> = {}): ModelRequest =>
  ({
    messages: [{ role: 'user', content: 'Hi' }],
    tools: [],
    signal: new AbortController().signal,
    ...extra,
  }) as ModelRequest;

describe('cassetteRequest and requestKey', () => {
  it('leave out the signal and callbacks, and key the same whatever the key order', () => {
    expect(cassetteRequest(request({ onProgress: () => undefined }), DEFAULT_REDACTOR)).toEqual({
      messages: [{ role: 'user', content: 'Hi' }],
      tools: [],
    });
    const a = cassetteRequest(request({ settings: { temperature: 0, topP: 1 } }), DEFAULT_REDACTOR);
    const b = cassetteRequest(request({ settings: { topP: 1, temperature: 0 } }), DEFAULT_REDACTOR);
    expect(requestKey(a)).toBe(requestKey(b));
    expect(requestKey(a)).toMatch(/^[0-9a-f]{64}$/);
    expect(requestKey(a)).not.toBe(requestKey(cassetteRequest(request(), DEFAULT_REDACTOR)));
  });

  it('key two requests that differ only in a secret alike: the secret never reaches the hash', () => {
    const withKey = (key: string) =>
      cassetteRequest(request({ messages: [{ role: 'user', content: `use ${key}` }] }), DEFAULT_REDACTOR);
    expect(requestKey(withKey('sk-live-4eC39HqLyjWDarjtT1zdp7dc'))).toBe(
      requestKey(withKey('sk-live-0000000000000000000000')),
    );
  });

  it('apply extra rules, and redact values under secret-looking keys at any depth', () => {
    const redactor = createRedactor({ patterns: [/\bACME-\d{8}\b/] });
    expect(
      redactPlainData({ note: 'ticket ACME-12345678', nested: [{ password: 'hunter2', port: 5432 }] }, redactor),
    ).toEqual({
      note: 'ticket [redacted]',
      nested: [{ password: '[redacted]', port: 5432 }],
    });
  });
});
