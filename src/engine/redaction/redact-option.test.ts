/** The `redact` config option: validated before anything runs, `undefined` meaning the defaults. */
import { describe, expect, it } from 'vitest';
import { resolveConfig } from '../config/config.js';
import { LoopConfigError } from '../../contracts/errors.js';
import { reply, scriptedModel } from '../../testing/index.js';

const model = scriptedModel([reply('unused')]);

function issuesOf(config: unknown): { path: string; message: string }[] {
  try {
    resolveConfig(config);
  } catch (error) {
    if (error instanceof LoopConfigError) return [...error.issues];
    throw error;
  }
  throw new Error('expected a LoopConfigError, but nothing was thrown');
}

describe('redact option', () => {
  it('is optional: without it, and with every field undefined, the built-in rules apply', () => {
    for (const redact of [undefined, {}, { keys: undefined, patterns: undefined }]) {
      const { redact: redactor } = resolveConfig({ model, redact });
      expect(redactor.text('password=hunter2 and Bearer sk-live-abc123')).toBe(
        'password=[redacted] and Bearer [redacted]',
      );
      expect(redactor.isSecretKey('customer_ssn')).toBe(false);
    }
  });

  it('compiles the given keys and patterns into the loop', () => {
    const { redact } = resolveConfig({
      model,
      redact: { keys: ['customer_ssn', /^x-tenant-/i], patterns: [/\bACME-\d{4}\b/] },
    });
    expect(redact.render({ customer_ssn: '078-05-1120', 'X-Tenant-Key': 'k', id: 1 })).toBe(
      '{"customer_ssn":"[redacted]","X-Tenant-Key":"[redacted]","id":1}',
    );
    expect(redact.text('ticket ACME-1234')).toBe('ticket [redacted]');
  });

  it.each<[string, unknown, { path: string; message: string }]>([
    [
      'a key that is neither string nor RegExp',
      { keys: [42] },
      { path: 'redact.keys[0]', message: 'expected a key name (string) or a RegExp' },
    ],
    ['an empty key name', { keys: ['ok', ''] }, { path: 'redact.keys[1]', message: 'expected a non-empty key name' }],
    [
      'keys that are not a list',
      { keys: 'customer_ssn' },
      { path: 'redact.keys', message: expect.stringMatching(/expected array/) as unknown as string },
    ],
    [
      'a pattern given as a string',
      { patterns: ['ACME-\\d+'] },
      { path: 'redact.patterns[0]', message: 'expected a RegExp' },
    ],
    [
      'a pattern that matches the empty string',
      { patterns: [/x*/] },
      { path: 'redact.patterns[0]', message: 'must not match the empty string' },
    ],
    [
      'a misspelt field',
      { key: ['customer_ssn'] },
      { path: 'redact.key', message: 'unknown option; did you mean "keys"?' },
    ],
    [
      'redact: false',
      false,
      { path: 'redact', message: expect.stringMatching(/expected object/) as unknown as string },
    ],
  ])('refuses %s, naming the field', (_label, redact, issue) => {
    expect(issuesOf({ model, redact })).toEqual([issue]);
  });
});
