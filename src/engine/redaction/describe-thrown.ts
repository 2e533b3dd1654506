/**
 * Words for whatever was thrown. JavaScript lets code throw anything (`undefined`, a string, an object
 * whose getters throw, a Proxy), and a stop detail or error message must still say what happened
 * instead of "undefined" or a second exception. Nothing here throws; redaction happens after.
 */

/** Descriptions of thrown non-Error objects are cut here: a thrown request object can be huge. */
const MAX_OBJECT_DESCRIPTION_CHARS = 500;

/** Runs `read`, or gives `fallback` when reading throws (a getter, a Proxy trap, a toString). */
function attempt<Value>(read: () => Value, fallback: Value): Value {
  try {
    return read();
  } catch {
    return fallback;
  }
}

function isErrorLike(value: object): value is { name?: unknown; message: unknown } {
  return attempt(() => value instanceof Error || typeof (value as { message?: unknown }).message === 'string', false);
}

function capped(text: string): string {
  return text.length <= MAX_OBJECT_DESCRIPTION_CHARS
    ? text
    : `${text.slice(0, MAX_OBJECT_DESCRIPTION_CHARS)}…(${text.length} chars)`;
}

/** `a Foo`, `an object`, `an array`: what kind of object it is, for the sentence. */
function kindOf(value: object): string {
  if (attempt(() => Array.isArray(value), false)) return 'an array';
  const constructorName = attempt(() => {
    const prototype: unknown = Object.getPrototypeOf(value);
    if (prototype === null || prototype === Object.prototype) return null;
    const name: unknown = (prototype as { constructor?: { name?: unknown } }).constructor?.name;
    return typeof name === 'string' && name !== '' ? name : null;
  }, null);
  if (constructorName === null) return 'an object';
  return `${/^[AEIOU]/i.test(constructorName) ? 'an' : 'a'} ${constructorName}`;
}

/** A toString of the value's own class (not Object's or Array's default), or null. */
function ownToString(value: object): string | null {
  return attempt(() => {
    const toString: unknown = (value as { toString?: unknown }).toString;
    if (
      typeof toString !== 'function' ||
      toString === Object.prototype.toString ||
      toString === Array.prototype.toString
    )
      return null;
    const text: unknown = toString.call(value);
    return typeof text === 'string' ? text : null;
  }, null);
}

function json(value: object): string | null {
  return attempt(
    () => JSON.stringify(value, (_key, inner: unknown) => (typeof inner === 'bigint' ? `${inner}n` : inner)) ?? null,
    null,
  );
}

function describeError(error: { name?: unknown; message: unknown }): string {
  const name = attempt(() => error.name, undefined);
  const message = attempt(() => error.message, undefined);
  const label = typeof name === 'string' && name !== '' ? name : 'Error';
  if (typeof message !== 'string') return `${label} (its message could not be read)`;
  return message === '' ? label : `${label}: ${message}`;
}

function describeObject(value: object): string {
  if (isErrorLike(value)) return describeError(value);
  const text = ownToString(value);
  if (text !== null) return capped(text);
  const serialised = json(value);
  return serialised === null
    ? `${kindOf(value)} was thrown (it could not be described)`
    : `${kindOf(value)} was thrown: ${capped(serialised)}`;
}

/**
 * Describes any thrown value in words, never throwing itself: an Error as `Name: message`, a string
 * as itself, other values as what was thrown (`undefined was thrown`, `an object was thrown: {"code":7}`).
 * @example
 * try { await work() } catch (error) { log(`work failed: ${describeThrown(error)}`) }
 * describeThrown(new TypeError('x is not a function')) // 'TypeError: x is not a function'
 * describeThrown(undefined)                            // 'undefined was thrown'
 */
export function describeThrown(value: unknown): string {
  switch (typeof value) {
    case 'string':
      return value === '' ? 'an empty string was thrown' : value;
    case 'undefined':
      return 'undefined was thrown';
    case 'number':
    case 'boolean':
      return `${String(value)} was thrown`;
    case 'bigint':
      return `${value.toString()}n was thrown`;
    case 'symbol':
      return `${value.toString()} was thrown`;
    case 'function': {
      const name = attempt(() => (value as { name?: unknown }).name, undefined);
      return typeof name === 'string' && name !== '' ? `the function ${name} was thrown` : 'a function was thrown';
    }
    case 'object':
      return value === null ? 'null was thrown' : describeObject(value);
  }
}

/**
 * The message of a thrown Error (its name when the message is empty), otherwise `describeThrown`:
 * for texts that already say what failed, such as `model call failed: <message>`.
 * @example
 * thrownMessage(new Error('disk full')) // 'disk full'
 * thrownMessage(null)                   // 'null was thrown'
 */
export function thrownMessage(value: unknown): string {
  if (typeof value !== 'object' || value === null || !isErrorLike(value)) return describeThrown(value);
  const message = attempt(() => value.message, undefined);
  if (typeof message === 'string' && message !== '') return message;
  return describeError(value);
}

/**
 * The thrown value as an Error: Errors as they are, anything else wrapped with its description as
 * the message and the value as `cause`.
 * @example
 * session.fatalError = toError(thrown);
 */
export function toError(value: unknown): Error {
  return attempt(() => value instanceof Error, false)
    ? (value as Error)
    : new Error(describeThrown(value), { cause: value });
}

/**
 * `name`, `message` and a string `code` of an error, read without ever throwing.
 * @example
 * const fields = errorFields(session.fatalError); // { name: 'ModelCallError', message: '...', code: 'model_auth' }
 */
export function errorFields(error: Error): { name: string; message: string; code?: string } {
  const name = attempt(() => error.name, undefined);
  const message = attempt(() => error.message, undefined);
  const code = attempt(() => (error as { code?: unknown }).code, undefined);
  return {
    name: typeof name === 'string' && name !== '' ? name : 'Error',
    message: typeof message === 'string' ? message : describeError(error),
    ...(typeof code === 'string' ? { code } : {}),
  };
}
