/**
 * What identifies a model request in a cassette: every plain-data field of the request (messages,
 * tools and whatever optional fields a request carries), the abort signal and functions (callbacks)
 * left out, redacted, then hashed as canonical JSON. Redacting before hashing, at record and at
 * replay alike, means a secret is never written to disk, not even inside a hash someone could
 * brute-force, and a replay still matches: it redacts its live request the same way.
 */
import { hash } from 'node:crypto';
import { canonicalJson } from '../../engine/progress/canonical-json.js';
import { REDACTED, type Redactor } from '../../engine/redaction/redact.js';
import type { ModelRequest } from '../../contracts/model.js';

/** JSON data as a cassette holds it. */
export type PlainData = null | boolean | number | string | PlainData[] | { [key: string]: PlainData };

/** Request fields that never decide the answer. */
const IGNORED_FIELDS: ReadonlySet<string> = new Set(['signal']);

/**
 * The value as JSON data: keys sorted, `undefined` and functions dropped, `toJSON` honoured (as
 * `canonicalJson` does). Throws `TypeError` on circular structures and bigints.
 * @example
 * toPlainData({ b: 1, a: undefined, f: () => 1 }) // { b: 1 }
 */
export function toPlainData(value: unknown): PlainData {
  return JSON.parse(canonicalJson(value)) as PlainData;
}

/**
 * Plain data with every string passed through the redactor's text rules and every value under a
 * secret-looking key name replaced by `[redacted]`, at any depth.
 * @example
 * redactPlainData({ apiKey: 'abc', note: 'Bearer sk-live-123456' }, DEFAULT_REDACTOR) // { apiKey: '[redacted]', note: 'Bearer [redacted]' }
 */
export function redactPlainData(value: PlainData, redactor: Redactor, key?: string): PlainData {
  if (key !== undefined && (typeof value === 'string' || typeof value === 'number') && redactor.isSecretKey(key))
    return REDACTED;
  if (typeof value === 'string') return redactor.text(value);
  if (value === null || typeof value !== 'object') return value;
  if (Array.isArray(value)) return value.map((item) => redactPlainData(item, redactor));
  const copy: { [key: string]: PlainData } = {};
  for (const [name, inner] of Object.entries(value)) copy[name] = redactPlainData(inner, redactor, name);
  return copy;
}

/**
 * The request as a cassette sees it: its plain-data fields (not `signal`, not callbacks), redacted.
 * A field added to `ModelRequest` later takes part without a change here.
 * @example
 * cassetteRequest({ messages, tools, signal, onProgress }, redactor) // { messages: [...], tools: [...] }
 */
export function cassetteRequest(request: ModelRequest, redactor: Redactor): { [key: string]: PlainData } {
  const fields: Record<string, unknown> = {};
  for (const [name, value] of Object.entries(request)) {
    if (!IGNORED_FIELDS.has(name) && typeof value !== 'function') fields[name] = value;
  }
  return redactPlainData(toPlainData(fields), redactor) as { [key: string]: PlainData };
}

/**
 * The key a cassette files a request under: SHA-256 of its canonical JSON, in hex.
 * @example
 * requestKey(cassetteRequest(request, redactor)) // '3f2a…' (64 hex digits)
 */
export function requestKey(request: PlainData): string {
  return hash('sha256', canonicalJson(request), 'hex');
}
