import { describe, expect, it, vi } from 'vitest';
import { createRedactor, DEFAULT_REDACTOR, REDACTED } from './redact.js';

const redactor = DEFAULT_REDACTOR;

describe('secret key names', () => {
  it.each([
    'secret',
    'client_secret',
    'clientSecret',
    'secrets',
    'aws_secret_access_key',
    'secretAccessKey',
    'AWS_SECRET_ACCESS_KEY',
    'api_key',
    'apiKey',
    'APIKey',
    'x-api-key',
    'X-Goog-Api-Key',
    'apikey',
    'private_key',
    'privateKey',
    'private_key_id',
    'access_key',
    'aws_access_key_id',
    'signingKey',
    'encryption_key',
    'ocp-apim-subscription-key',
    'sessionKey',
    'token',
    'access_token',
    'accessToken',
    'refreshToken',
    'id_token',
    'x-auth-token',
    'X-Amz-Security-Token',
    'csrfToken',
    'authTokens',
    'tokens',
    'password',
    'Password',
    'dbPassword',
    'DB_PASSWORD',
    'passwd',
    'db_pass',
    'pwd',
    'passphrase',
    'ssh_passphrase',
    'jwt',
    'jwtToken',
    'id_jwt',
    'credential',
    'credentials',
    'googleCredentials',
    'X-Amz-Credential',
    'connectionString',
    'connection_string',
    'ConnectionString',
    'connStr',
    'authorization',
    'Authorization',
    'Proxy-Authorization',
    'cookie',
    'Set-Cookie',
    'cookies',
    'sessionId',
    'session_id',
    'JSESSIONID',
    'PHPSESSID',
    'bearer',
    'X-Amz-Signature',
    'sig',
    'sentry_dsn',
    'otp',
    'basicAuth',
    'authHeader',
    'pw',
    'user_pw',
    'pin',
    'card_pin',
    'cvv',
    'cvc',
  ])('%s is a secret', (name) => {
    expect(redactor.isSecretKey(name)).toBe(true);
  });

  it.each([
    'maxTokens',
    'max_tokens',
    'inputTokens',
    'outputTokens',
    'totalTokens',
    'prompt_tokens',
    'completion_tokens',
    'cachedTokens',
    'reasoningTokens',
    'maxInputTokens',
    'maxOutputTokens',
    'maxInputTokensPerCall',
    'tokenizer',
    'tokenCount',
    'token_type',
    'pageToken',
    'nextPageToken',
    'eosToken',
    'keyboard',
    'monkey',
    'turnkey',
    'key',
    'keys',
    'keyId',
    'idempotencyKey',
    'cacheKey',
    'sortKey',
    'partition_key',
    'publicKey',
    'author',
    'authority',
    'auth',
    'passage',
    'bypass',
    'secretary',
    'order_id',
    'id',
    'query',
    'status',
    'costUsd',
    'usage',
    'message',
    'detail',
    'pinned',
    'spinner',
    'pinCodeLength',
  ])('%s is not a secret', (name) => {
    expect(redactor.isSecretKey(name)).toBe(false);
  });
});

describe('secret-looking values in text', () => {
  it.each([
    [
      'a bearer token',
      'Incorrect API key provided: Bearer sk-live-abc123... (401)',
      'Incorrect API key provided: Bearer [redacted]... (401)',
    ],
    ['an OpenAI project key', 'key sk-proj-Ab12Cd34Ef56Gh78 rejected', 'key [redacted] rejected'],
    ['a Stripe live key', 'charge with sk_live_4eC39HqLyjWDarjtT1zdp7dc failed', 'charge with [redacted] failed'],
    ['an Anthropic key', 'x-api-key sk-ant-api03-abc123DEF456', 'x-api-key [redacted]'],
    ['a GitHub token', 'push with ghp_abcdefghijklmnopqrstuvwxyz0123456789 denied', 'push with [redacted] denied'],
    ['a fine-grained GitHub token', 'github_pat_11ABCDEFG0123456789_abcdefghijklmnop', '[redacted]'],
    ['a Slack token', 'slack says xoxb-1234567890-abcdefghij invalid_auth', 'slack says [redacted] invalid_auth'],
    ['an AWS access key id', 'AKIAIOSFODNN7EXAMPLE is not authorised', '[redacted] is not authorised'],
    ['a Google API key', 'key=AIzaSyA-1234567890abcdefghijklmnopqrstu', 'key=[redacted]'],
    [
      'a JWT',
      'token eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiIxMjM0In0.dozjgNryP4J3jVmNHl0w5N_XgL0n3I9PlFUP0THsR8U expired',
      'token [redacted] expired',
    ],
    [
      'URL query credentials',
      'GET https://api.example.com/v1/orders?api_key=abc123&token=xyz&page=2 failed',
      'GET https://api.example.com/v1/orders?api_key=[redacted]&token=[redacted]&page=2 failed',
    ],
    [
      'a signed URL',
      'https://bucket.s3.amazonaws.com/f?X-Amz-Credential=AKID%2F20240101&X-Amz-Signature=abcdef0123',
      'https://bucket.s3.amazonaws.com/f?X-Amz-Credential=[redacted]&X-Amz-Signature=[redacted]',
    ],
    [
      'a URL password',
      'cannot reach postgres://admin:hunter2@db.example.com:5432/app',
      'cannot reach postgres://admin:[redacted]@db.example.com:5432/app',
    ],
    ['a URL password without a user', 'redis://:s3cret@cache:6379', 'redis://:[redacted]@cache:6379'],
    [
      'a connection string password',
      'Server=db;User Id=sa;Password=hunter2;Database=app',
      'Server=db;User Id=sa;Password=[redacted];Database=app',
    ],
    [
      'an authorization header',
      'sent Authorization: Basic dXNlcjpwYXNz\nthen failed',
      'sent Authorization: [redacted]\nthen failed',
    ],
    ['a cookie header', 'Cookie: session=abc; theme=dark', 'Cookie: [redacted]'],
    [
      'a JSON pair',
      '{"aws_secret_access_key":"wJalrXUtnFEMI/K7MDENG","region":"eu-west-1"}',
      '{"aws_secret_access_key":"[redacted]","region":"eu-west-1"}',
    ],
    ['a JSON pair cut before its closing quote', '{"passphrase":"correct horse', '{"passphrase":"[redacted]"'],
    ['a number under a secret key', '{"pwd": 1234, "ok": true}', '{"pwd": [redacted], "ok": true}'],
    ['a YAML-ish pair', 'jwt: abc.def.ghi\nuser: ada', 'jwt: [redacted]\nuser: ada'],
    [
      'a pair inside a harmless value',
      '{"note":"retry with password=hunter2 later"}',
      '{"note":"retry with password=[redacted] later"}',
    ],
    [
      'a Slack webhook',
      'posting to https://hooks.slack.com/services/T000/B000/XXXXXXXXXXXX',
      'posting to https://hooks.slack.com/services/[redacted]',
    ],
    [
      'a private key block',
      'key:\n-----BEGIN RSA PRIVATE KEY-----\nMIIEowIBAAKCAQEA\nabc==\n-----END RSA PRIVATE KEY-----\ndone',
      'key:\n[redacted]\ndone',
    ],
    [
      'an encrypted private key block with headers',
      '-----BEGIN ENCRYPTED PRIVATE KEY-----\nProc-Type: 4,ENCRYPTED\nDEK-Info: AES-128-CBC,AB12\n\nMIIE\n-----END ENCRYPTED PRIVATE KEY-----',
      '[redacted]',
    ],
    [
      'a private key block cut short',
      'got -----BEGIN PRIVATE KEY-----\nMIIEvQIBADANBgkqhkiG9w0BAQEFAASC',
      'got [redacted]',
    ],
  ])('redacts %s and keeps the text around it', (_label, text, expected) => {
    expect(redactor.text(text)).toBe(expected);
  });

  it.each([
    'Use scikit-learn (sk-learn) for this',
    'the bearer of bad news',
    'maxTokens: 4096, inputTokens: 120, outputTokens: 30',
    'key: orders/2024.csv',
    'order O-101 shipped; status=ok',
    'https://example.com/path?page=2&q=shoes',
    'Error: the tool timed out after 30000 ms',
  ])('leaves ordinary text alone: %s', (text) => {
    expect(redactor.text(text)).toBe(text);
  });

  it('is idempotent: redacting twice changes nothing more', () => {
    const text = 'Authorization: Bearer abc123 and {"password":"x"} and https://u:p@h and password=[redacted]';
    const once = redactor.text(text);
    expect(redactor.text(once)).toBe(once);
    expect(once).not.toMatch(/abc123|"x"|:p@/);
  });
});

describe('render', () => {
  it('masks values under secret keys at any depth, whatever their type, and keeps usage counters', () => {
    const value = {
      usage: { inputTokens: 5, outputTokens: 2 },
      auth: { passphrase: 'p', jwt: { header: 'h' } },
      list: [{ secretAccessKey: 9 }],
    };
    expect(redactor.render(value)).toBe(
      '{"usage":{"inputTokens":5,"outputTokens":2},"auth":{"passphrase":"[redacted]","jwt":"[redacted]"},"list":[{"secretAccessKey":"[redacted]"}]}',
    );
  });

  it('leaves a key that holds undefined out, as JSON does', () => {
    expect(redactor.render({ password: undefined, id: 1 })).toBe('{"id":1}');
  });

  it('never throws', () => {
    const circular: Record<string, unknown> = {};
    circular.self = circular;
    expect(redactor.render(circular)).toBe('[object Object]');
    expect(redactor.render(10n)).toBe('"10"');
    expect(redactor.render(undefined)).toBe('undefined');
  });
});

describe('strings', () => {
  it('redacts every string of an event at any depth and leaves numbers and booleans alone', () => {
    const event = {
      type: 'step-end',
      runId: 'r',
      toolCalls: [{ callId: 'c', name: 'login', argumentsSummary: '{"password":"hunter2"}' }],
      replySummary: 'use Bearer abc123def',
      usage: { inputTokens: 5 },
      truncated: false,
    };
    const redacted = redactor.strings(event);
    expect(redacted).toEqual({
      ...event,
      toolCalls: [{ callId: 'c', name: 'login', argumentsSummary: '{"password":"[redacted]"}' }],
      replySummary: 'use Bearer [redacted]',
    });
    expect(event.replySummary).toBe('use Bearer abc123def');
  });

  it('copies own enumerable keys in order, without inherited ones, and never the object itself', () => {
    const inherited = Object.create({ leaked: 'Bearer abc123def' }) as Record<string, unknown>;
    const event = { b: 'x', a: { token: 'sk-live-4eC39HqLyjWDarjtT1zdp7dc', n: 1 }, 2: 'two', inherited };
    Object.defineProperty(event, 'hidden', { value: 'not enumerable', enumerable: false });
    const nullPrototype = Object.assign(Object.create(null) as Record<string, unknown>, { note: 'Bearer abc123def' });
    const redacted = redactor.strings({ ...event, nullPrototype });
    expect(Object.keys(redacted)).toEqual(['2', 'b', 'a', 'inherited', 'nullPrototype']);
    expect(redacted.a).toEqual({ token: REDACTED, n: 1 });
    expect(redacted.a).not.toBe(event.a);
    // An object with another prototype is left as it is (not a plain record); a prototype-less one is walked.
    expect(redacted.inherited).toBe(inherited);
    expect(redacted.nullPrototype).toEqual({ note: `Bearer ${REDACTED}` });
    expect(redacted).not.toHaveProperty('hidden');
  });

  it('walks an event without Object.entries: no array per object and per key on every trace event', () => {
    const entries = vi.spyOn(Object, 'entries');
    try {
      const redacted = redactor.strings({ type: 'machine-event', event: { type: 'x', decision: { calls: 1 } } });
      expect(redacted.event.decision).toEqual({ calls: 1 });
      expect(entries).not.toHaveBeenCalled();
    } finally {
      entries.mockRestore();
    }
  });
});

describe('sharedStrings', () => {
  const event = {
    type: 'machine-event',
    runId: 'r',
    at: 1,
    event: {
      type: 'model.responded',
      decision: { kind: 'tool_calls', calls: 2, parseError: 'bad: Bearer abc123def' },
      usage: { inputTokens: 5, outputTokens: 1 },
      names: ['lookup', 'x Bearer abc123def', 'search'],
    },
  };

  it('redacts as strings does, copying only the objects and arrays on the way to a changed string', () => {
    const shared = redactor.sharedStrings(event);
    expect(shared).toEqual(redactor.strings(event));
    expect(Object.keys(shared.event)).toEqual(Object.keys(event.event));
    expect(shared.event.decision.parseError).toBe(`bad: Bearer ${REDACTED}`);
    expect(shared.event.names).toEqual(['lookup', `x Bearer ${REDACTED}`, 'search']);
    // Copied where a string changed, shared where nothing did; the given value is left as it was.
    expect(shared).not.toBe(event);
    expect(shared.event.decision).not.toBe(event.event.decision);
    expect(shared.event.usage).toBe(event.event.usage);
    expect(event.event.decision.parseError).toBe('bad: Bearer abc123def');
    expect(event.event.names[1]).toBe('x Bearer abc123def');
  });

  it('returns a value with nothing to redact as it is, not a copy', () => {
    const clean = { ...event, event: { ...event.event, decision: { kind: 'final' }, names: ['lookup'] } };
    expect(redactor.sharedStrings(clean)).toBe(clean);
    expect(redactor.strings(clean)).not.toBe(clean);
  });

  it('applies user patterns to every string, the event type and run id too', () => {
    const custom = createRedactor({ patterns: [/machine/] });
    const shared = custom.sharedStrings(event);
    expect(shared).toEqual(custom.strings(event));
    expect(shared.type).toBe(`${REDACTED}-event`);
  });
});

describe('user-supplied keys and patterns', () => {
  const custom = createRedactor({ keys: ['customer_ssn', /^x-internal-/i], patterns: [/\bACME-\d{6}\b/, /INTERNAL/g] });

  it('matches a key name string in any case and style', () => {
    for (const name of ['customer_ssn', 'customerSsn', 'Customer-SSN', 'CUSTOMER_SSN'])
      expect(custom.isSecretKey(name)).toBe(true);
    expect(custom.isSecretKey('customer_ssn_hint')).toBe(false);
    expect(custom.render({ customer_ssn: '078-05-1120', plan: 'pro' })).toBe(
      '{"customer_ssn":"[redacted]","plan":"pro"}',
    );
    expect(custom.text('customer_ssn=078-05-1120 plan=pro')).toBe('customer_ssn=[redacted] plan=pro');
  });

  it('tests a key name RegExp on the name, every time (a global flag keeps no state)', () => {
    expect(custom.isSecretKey('X-Internal-Route')).toBe(true);
    expect(custom.isSecretKey('x-internal-id')).toBe(true);
    expect(custom.isSecretKey('x-external-id')).toBe(false);
    const stateful = createRedactor({ keys: [/^code$/g] });
    expect([stateful.isSecretKey('code'), stateful.render({ code: 1, other: { code: 2 } })]).toEqual([
      true,
      '{"code":"[redacted]","other":{"code":"[redacted]"}}',
    ]);
  });

  it('replaces every match of a pattern, with or without a global flag', () => {
    expect(custom.text('tickets ACME-123456 and ACME-654321; INTERNAL and INTERNAL')).toBe(
      'tickets [redacted] and [redacted]; [redacted] and [redacted]',
    );
  });

  it('adds to the built-in rules, never replaces them', () => {
    expect(custom.text('password=hunter2')).toBe('password=[redacted]');
    expect(createRedactor({}).isSecretKey('api_key')).toBe(true);
  });
});

describe('cost on long and hostile input', () => {
  const MEGABYTE = 1_000_000;

  it.each([
    ['a', 'a'.repeat(MEGABYTE)],
    ['Bearer ', 'Bearer '.repeat(MEGABYTE / 7)],
    ['a-', 'a-'.repeat(MEGABYTE / 2)],
    ['a=', 'a='.repeat(MEGABYTE / 2)],
    ['"a":', '"a":'.repeat(MEGABYTE / 4)],
    ['password=', 'password='.repeat(MEGABYTE / 9)],
    ['eyJ-', 'eyJ-'.repeat(MEGABYTE / 4)],
    ['eyJa.', 'eyJa.'.repeat(MEGABYTE / 5)],
    ['http://', 'http://'.repeat(MEGABYTE / 7)],
    ['a:b', 'https://a:b'.repeat(MEGABYTE / 11)],
    ['sk-', 'sk-'.repeat(MEGABYTE / 3)],
    ['-----BEGIN PRIVATE KEY-----', '-----BEGIN PRIVATE KEY-----'.repeat(MEGABYTE / 27)],
    ['"password":"\\', `"password":"${'\\'.repeat(MEGABYTE)}`],
    ['a BEGIN line and no END', `-----BEGIN PRIVATE KEY-----${'A'.repeat(MEGABYTE)}`],
    ['-----BEGIN A…', `-----BEGIN ${'A'.repeat(MEGABYTE)}`],
  ])('finishes on a megabyte of %j', (_label, text) => {
    const custom = createRedactor({ keys: ['a'], patterns: [/x+y/] });
    expect(typeof redactor.text(text)).toBe('string');
    expect(typeof custom.text(text)).toBe('string');
  });

  it('redacts a secret deep inside a long text', () => {
    const text = `${'lorem ipsum '.repeat(50_000)}Bearer sk-live-abc123 ${'dolor '.repeat(50_000)}`;
    const result = redactor.text(text);
    expect(result).not.toContain('sk-live-abc123');
    expect(result).toContain(`Bearer ${REDACTED}`);
  });
});

describe('known secret values (the secrets tools carry)', () => {
  it('redacts each value wherever it appears, the longest first, before the built-in rules take part of one', () => {
    const redactor = createRedactor({}, ['odt_4f9a8b7c', 'odt_4f9a8b7c6d5e', 'a.b*c+d?e', 'ab']);
    expect(redactor.text('token odt_4f9a8b7c6d5e and odt_4f9a8b7c.')).toBe(`token ${REDACTED} and ${REDACTED}.`);
    // Taken literally, not as a pattern; values under four characters are left (they are ordinary words).
    expect(redactor.text('a.b*c+d?e axbxcxdxe ab')).toBe(`${REDACTED} axbxcxdxe ab`);
    expect(redactor.strings({ nested: ['x odt_4f9a8b7c6d5e'] })).toEqual({ nested: [`x ${REDACTED}`] });
    expect(createRedactor().text('odt_4f9a8b7c6d5e')).toBe('odt_4f9a8b7c6d5e');
  });
});
