/**
 * The credentials an `openaiModel` sends, and their removal from every message it reports. A server may
 * quote any of them back (a key in a 401, a gateway's header in an HTML error page, a proxy's token in a
 * stream's error event); a key not shaped like `sk-…` and a header value look like ordinary text to the
 * loop's redaction rules, so the adapter, which knows them, scrubs them before any sink sees its message.
 */
import { ModelCallError, type ModelCallErrorLike } from '../../contracts/errors.js';
import { REDACTED } from '../../engine/redaction/redact.js';

/** Shorter values cannot be told apart from ordinary words (and are no secret worth the name). */
const MIN_SECRET_CHARS = 4;

/** Anything shaped like an OpenAI key, and a masked quote of any key (`sk-proj-abc***xyz`, `a1b2****9z`). */
const KEY_SHAPES = /\bsk-[A-Za-z0-9_*.-]{3,}|[A-Za-z0-9_-]*\*{3,}[A-Za-z0-9_*.-]*/g;

/**
 * The secrets of one model: the key and every header value the user set, and the credential of a
 * `<scheme> <credential>` value (`Bearer abc…`) on its own too, longest first so none is left half-scrubbed.
 * @example
 * modelSecrets('az-key-0123', { 'Proxy-Authorization': 'Bearer tok-4567' }) // ['Bearer tok-4567', 'az-key-0123', 'tok-4567']
 */
export function modelSecrets(apiKey: string | null, headers: Readonly<Record<string, string>> = {}): string[] {
  const secrets = new Set<string>();
  const add = (value: string) => {
    const trimmed = value.trim();
    if (trimmed.length >= MIN_SECRET_CHARS) secrets.add(trimmed);
  };
  if (apiKey !== null) add(apiKey);
  for (const value of Object.values(headers)) {
    add(value);
    const credential = /^[A-Za-z][\w-]*\s+(\S+)$/.exec(value.trim())?.[1];
    if (credential !== undefined) add(credential);
  }
  return [...secrets].sort((left, right) => right.length - left.length);
}

/**
 * The text with every one of `secrets`, and anything shaped like an OpenAI key, replaced by `[redacted]`.
 * @example
 * scrubSecrets('bad key az-key-0123', ['az-key-0123']) // 'bad key [redacted]'
 */
export function scrubSecrets(text: string, secrets: readonly string[]): string {
  let scrubbed = text;
  for (const secret of secrets) scrubbed = scrubbed.split(secret).join(REDACTED);
  return scrubbed.replace(KEY_SHAPES, (match) => (match === REDACTED || !/[A-Za-z0-9]/.test(match) ? match : REDACTED));
}

/**
 * A model call error with its message scrubbed: the same error when nothing needed scrubbing, else a copy
 * with the same kind, status, Retry-After and usage. Anything else (a caller's abort reason) is left as it is.
 * @example
 * throw scrubModelError(classifyOpenAIError(error, context), secrets);
 */
export function scrubModelError(error: unknown, secrets: readonly string[]): unknown {
  if (!ModelCallError.is(error)) return error;
  const message = scrubSecrets(error.message, secrets);
  if (message === error.message) return error;
  return copyModelError(error, { message });
}

/** A copy of a model call error with some fields changed. */
export function copyModelError(
  error: ModelCallErrorLike,
  changes: Partial<Pick<ModelCallErrorLike, 'message' | 'usage'>>,
): ModelCallError {
  const usage = changes.usage ?? error.usage;
  return new ModelCallError({
    kind: error.kind,
    message: changes.message ?? error.message,
    ...(error.status === undefined ? {} : { status: error.status }),
    ...(error.retryAfterMs === undefined ? {} : { retryAfterMs: error.retryAfterMs }),
    ...(usage === undefined ? {} : { usage }),
  });
}
