import { describe, expect, it } from 'vitest';
import { ModelCallError } from '../../contracts/errors.js';
import { modelSecrets, scrubModelError, scrubSecrets } from './secret-scrub.js';

describe('modelSecrets', () => {
  it('takes the key, every header value and the credential after an auth scheme, longest first', () => {
    expect(
      modelSecrets('az-key-0123', {
        'api-key': 'gw-9876543',
        'Proxy-Authorization': 'Bearer tok-4567',
        'X-Short': 'v1',
      }),
    ).toEqual(['Bearer tok-4567', 'az-key-0123', 'gw-9876543', 'tok-4567']);
  });

  it('has no key when there is none to hide', () => {
    expect(modelSecrets(null, {})).toEqual([]);
  });
});

describe('scrubSecrets', () => {
  it('replaces each secret and anything shaped like an OpenAI key or a masked key', () => {
    const secrets = modelSecrets('az-key-0123', { Authorization: 'Bearer tok-4567' });
    expect(scrubSecrets('key az-key-0123, header Bearer tok-4567, token tok-4567', secrets)).toBe(
      'key [redacted], header [redacted], token [redacted]',
    );
    expect(scrubSecrets('Incorrect API key provided: sk-proj-abc*********xyz; also a1b2****9z9z', [])).toBe(
      'Incorrect API key provided: [redacted]; also [redacted]',
    );
    expect(scrubSecrets('a *** rating, nothing secret', [])).toBe('a *** rating, nothing secret');
  });
});

describe('scrubModelError', () => {
  it('copies a model call error with its message scrubbed and every other field kept', () => {
    const error = new ModelCallError({
      kind: 'rate_limited',
      status: 429,
      retryAfterMs: 50,
      usage: { inputTokens: 3, outputTokens: 1 },
      message: 'slow down, az-key-0123',
    });
    const scrubbed = scrubModelError(error, ['az-key-0123']);
    expect(scrubbed).toBeInstanceOf(ModelCallError);
    expect(scrubbed).toMatchObject({
      kind: 'rate_limited',
      status: 429,
      retryAfterMs: 50,
      usage: { inputTokens: 3, outputTokens: 1 },
      message: 'slow down, [redacted]',
      code: 'model_rate_limited',
    });
  });

  it('leaves an error that needs nothing, and anything that is not a model call error, as it is', () => {
    const clean = new ModelCallError({ kind: 'server', message: 'busy' });
    expect(scrubModelError(clean, ['az-key-0123'])).toBe(clean);
    const reason = new Error('cancelled by az-key-0123');
    expect(scrubModelError(reason, ['az-key-0123'])).toBe(reason);
  });
});
