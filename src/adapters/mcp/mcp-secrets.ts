/**
 * The credentials a connection holds: every value of the target's `env` and `headers` (an MCP server is
 * given its environment on purpose, and that is where its tokens go), and the credential of a
 * `<scheme> <credential>` header (`Bearer abc…`) on its own. Each tool carries them as `secrets`, so the
 * loop redacts them everywhere, and the adapter scrubs them from what it returns and throws, so the
 * model never reads one either.
 */
import { REDACTED } from '../../engine/redaction/redact.js';

/** Shorter values (`1`, `true`, `info`) cannot be told apart from ordinary words and would wreck every text they appear in. */
const MIN_SECRET_CHARS = 8;

/**
 * The secret values of a target, longest first so none is left half-scrubbed.
 * @example
 * targetSecrets({ GITHUB_TOKEN: 'ghp_0123456789' }, { Authorization: 'Bearer tok-0123456789' }) // ['Bearer tok-0123456789', 'tok-0123456789', 'ghp_0123456789']
 */
export function targetSecrets(
  env: Readonly<Record<string, string>> = {},
  headers: Readonly<Record<string, string>> = {},
): string[] {
  const secrets = new Set<string>();
  const add = (value: string) => {
    const trimmed = value.trim();
    if (trimmed.length >= MIN_SECRET_CHARS) secrets.add(trimmed);
  };
  for (const value of [...Object.values(env), ...Object.values(headers)]) {
    add(value);
    const credential = /^[A-Za-z][\w-]*\s+(\S+)$/.exec(value.trim())?.[1];
    if (credential !== undefined) add(credential);
  }
  return [...secrets].sort((left, right) => right.length - left.length);
}

/**
 * The text with every one of `secrets` replaced by `[redacted]`.
 * @example
 * scrubText('token ghp_0123456789 refused', ['ghp_0123456789']) // 'token [redacted] refused'
 */
export function scrubText(text: string, secrets: readonly string[]): string {
  let scrubbed = text;
  for (const secret of secrets) if (scrubbed.includes(secret)) scrubbed = scrubbed.split(secret).join(REDACTED);
  return scrubbed;
}

/** A copy of a JSON value with every string scrubbed (keys included: a server may key a map by its token). */
export function scrubJson(value: unknown, secrets: readonly string[]): unknown {
  if (secrets.length === 0) return value;
  if (typeof value === 'string') return scrubText(value, secrets);
  if (Array.isArray(value)) return value.map((item: unknown) => scrubJson(item, secrets));
  if (typeof value !== 'object' || value === null) return value;
  return Object.fromEntries(
    Object.entries(value).map(([key, inner]) => [scrubText(key, secrets), scrubJson(inner, secrets)]),
  );
}
