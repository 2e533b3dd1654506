import { describe, expect, it } from 'vitest';
import { scrubJson, scrubText, targetSecrets } from './mcp-secrets.js';

describe('targetSecrets', () => {
  it('takes every env and header value, the credential of a scheme value too, longest first; short values are left', () => {
    expect(
      targetSecrets(
        { GITHUB_TOKEN: 'ghp_0123456789', LOG: 'info', DEBUG: '1' },
        { Authorization: 'Bearer tok-0123456789' },
      ),
    ).toEqual(['Bearer tok-0123456789', 'ghp_0123456789', 'tok-0123456789']);
  });

  it('scrubs text and JSON', () => {
    expect(scrubText('a ghp_0123456789 b ghp_0123456789', ['ghp_0123456789'])).toBe('a [redacted] b [redacted]');
    expect(scrubJson({ list: [1, 'x ghp_0123456789'] }, ['ghp_0123456789'])).toEqual({ list: [1, 'x [redacted]'] });
  });
});
