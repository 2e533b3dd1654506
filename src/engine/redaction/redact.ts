/**
 * The one place secrets are taken out of what leaves a run: trace events, stop details, warnings
 * and error messages. Values under secret-looking key names and values that look like secrets in
 * any text become `[redacted]`; the text around them stays. Built once per loop: every pattern is
 * compiled up front and linear in the text, because it runs on every trace event.
 */
import { compactKeyName, isBuiltInSecretKey } from './secret-key-names.js';
import { BUILT_IN_VALUE_RULES, KEY_VALUE_NAME, MAY_HOLD_SECRET, REDACTED } from './secret-value-patterns.js';
import { memoiseText } from './text-memo.js';

export { REDACTED } from './secret-value-patterns.js';

/**
 * Extra secrets to redact, on top of the built-in rules (which always apply).
 * - `keys`: key names whose values are secrets. A string matches the name in any case and style
 *   (`'customer_ssn'` also matches `customerSsn` and `Customer-SSN`); a RegExp is tested on the name.
 * - `patterns`: values to redact wherever they appear in text; each whole match becomes `[redacted]`.
 * @example
 * createLoop({ model, redact: { keys: ['customer_ssn', /^x-internal-/i], patterns: [/\bACME-[0-9]{8}\b/] } });
 */
export interface RedactOptions {
  keys?: readonly (string | RegExp)[];
  patterns?: readonly RegExp[];
}

/**
 * A compiled set of redaction rules.
 * @example
 * const redactor = createRedactor({ keys: ['customer_ssn'] });
 * redactor.text('retrying with Authorization: Bearer sk-live-4eC39HqLyjWDarjtT1zdp7dc'); // 'retrying with Authorization: [redacted]'
 */
export interface Redactor {
  /** Whether values under this key name are secrets. */
  isSecretKey(name: string): boolean;
  /** The text with every secret-looking value and every value of a secret-named pair replaced. */
  text(text: string): string;
  /** JSON of a value with the values of secret-named keys replaced, at any depth; never throws. Text patterns are not applied. */
  render(value: unknown): string;
  /** A copy of plain objects and arrays with every string in them passed through `text`. */
  strings<Value>(value: Value): Value;
  /**
   * What `strings` returns, but copying only the objects and arrays in which a string changes: a value with
   * nothing to redact comes back as it is (for an event the run made itself and hands on without keeping).
   */
  sharedStrings<Value>(value: Value): Value;
}

/** A cap on the key-name cache: key names come from tool arguments, so they are unbounded in number. */
const MAX_CACHED_KEY_NAMES = 2048;
/** A redacted pair's value is read up to here; a longer value loses only its first part. */
const MAX_PAIR_VALUE_CHARS = 4096;
/** Deeper than any trace event; the walk stops there instead of following a runaway structure. */
const MAX_STRINGS_DEPTH = 8;
const BARE_VALUE_END = /[\s"',;&#(){}[\]<>]/;

function withoutStatefulFlags(pattern: RegExp): RegExp {
  return new RegExp(pattern.source, pattern.flags.replace(/[gy]/g, ''));
}

function globalPattern(pattern: RegExp): RegExp {
  return new RegExp(pattern.source, `${pattern.flags.replace(/[gy]/g, '')}g`);
}

/** Where the value starting at `start` ends, and how its redacted form reads (quotes kept). */
function pairValue(text: string, start: number): { end: number; replacement: string } | null {
  const opening = text.charAt(start);
  if (opening === '"' || opening === "'") {
    let index = start + 1;
    const limit = Math.min(text.length, index + MAX_PAIR_VALUE_CHARS);
    while (index < limit) {
      const char = text.charAt(index);
      if (char === opening || char === '\n' || char === '\r') break;
      index += char === '\\' && opening === '"' ? 2 : 1;
    }
    index = Math.min(index, text.length);
    if (index === start + 1 || text.startsWith(REDACTED, start + 1)) return null;
    const closed = text.charAt(index) === opening;
    return { end: closed ? index + 1 : index, replacement: `${opening}${REDACTED}${opening}` };
  }
  if (opening === '' || opening === '[' || opening === '{' || BARE_VALUE_END.test(opening)) return null;
  let index = start;
  const limit = Math.min(text.length, start + MAX_PAIR_VALUE_CHARS);
  while (index < limit && !BARE_VALUE_END.test(text.charAt(index))) index++;
  return { end: index, replacement: REDACTED };
}

/** Replaces the values of `name=value` / `"name": "value"` pairs whose name is a secret's. */
function redactPairs(text: string, isSecretKey: (name: string) => boolean): string {
  const pattern = KEY_VALUE_NAME;
  pattern.lastIndex = 0;
  let result = '';
  let copied = 0;
  for (let match = pattern.exec(text); match !== null; match = pattern.exec(text)) {
    const name = match[2] ?? '';
    const valueStart = match.index + match[0].length;
    if (!isSecretKey(name)) continue;
    const value = pairValue(text, valueStart);
    if (value === null) continue;
    result += text.slice(copied, valueStart) + value.replacement;
    copied = value.end;
    pattern.lastIndex = value.end;
  }
  return copied === 0 ? text : result + text.slice(copied);
}

function isPlainObject(value: object): boolean {
  const prototype: unknown = Object.getPrototypeOf(value);
  return prototype === Object.prototype || prototype === null;
}

/** Shorter values cannot be told apart from ordinary words (and are no secret worth the name). */
const MIN_KNOWN_SECRET_CHARS = 4;

/** A literal value as a pattern; the longest first, so a secret that contains another is not left half-redacted. */
function knownSecretPatterns(values: readonly string[]): RegExp[] {
  const distinct = [...new Set(values.map((value) => value.trim()))].filter(
    (value) => value.length >= MIN_KNOWN_SECRET_CHARS,
  );
  return distinct
    .sort((left, right) => right.length - left.length)
    .map((value) => new RegExp(value.replace(/[.*+?^${}()|[\]\\]/g, '\\$&'), 'g'));
}

/**
 * Compiles the built-in rules plus the given ones. A loop compiles its rules once, from its `redact` option
 * and the `secrets` its tools carry (`knownSecrets`: literal values, redacted wherever they appear).
 * @example
 * const redactor = createRedactor({ keys: ['customer_ssn'] });
 * redactor.render({ customer_ssn: '078-05-1120', plan: 'pro' }); // '{"customer_ssn":"[redacted]","plan":"pro"}'
 */
export function createRedactor(options: RedactOptions = {}, knownSecrets: readonly string[] = []): Redactor {
  const userNames = new Set<string>();
  const userNamePatterns: RegExp[] = [];
  for (const key of options.keys ?? []) {
    if (typeof key === 'string') userNames.add(compactKeyName(key));
    else userNamePatterns.push(withoutStatefulFlags(key));
  }
  const knownValuePatterns = knownSecretPatterns(knownSecrets);
  const userValuePatterns = (options.patterns ?? []).map(globalPattern);
  const cache = new Map<string, boolean>();

  const isSecretKey = (name: string): boolean => {
    const cached = cache.get(name);
    if (cached !== undefined) return cached;
    const secret =
      isBuiltInSecretKey(name) ||
      userNames.has(compactKeyName(name)) ||
      userNamePatterns.some((pattern) => pattern.test(name));
    if (cache.size >= MAX_CACHED_KEY_NAMES) cache.clear();
    cache.set(name, secret);
    return secret;
  };

  // Remembered for short texts: the rules are pure, and ids and names recur on every step of every run.
  const text = memoiseText((input: string): string => {
    if (input === '') return input;
    let output = input;
    // Known values first: a built-in rule that took part of one would leave the rest unmatched.
    for (const pattern of knownValuePatterns) output = output.replace(pattern, REDACTED);
    if (MAY_HOLD_SECRET.test(output)) {
      for (const rule of BUILT_IN_VALUE_RULES) output = output.replace(rule.pattern, rule.replace);
      output = redactPairs(output, isSecretKey);
    }
    for (const pattern of userValuePatterns) output = output.replace(pattern, REDACTED);
    return output;
  });

  const render = (value: unknown): string => {
    if (typeof value === 'string') return value;
    try {
      return (
        JSON.stringify(value, (key, inner: unknown) => {
          if (key !== '' && inner !== undefined && isSecretKey(key)) return REDACTED;
          return typeof inner === 'bigint' ? inner.toString() : inner;
        }) ?? 'undefined'
      );
    } catch {
      // Circular structures, throwing getters and the like: a rendering must never throw.
      return Object.prototype.toString.call(value);
    }
  };

  const walk = (value: unknown, depth: number): unknown => {
    if (typeof value === 'string') return text(value);
    if (typeof value !== 'object' || value === null || depth >= MAX_STRINGS_DEPTH) return value;
    if (Array.isArray(value)) return value.map((item: unknown) => walk(item, depth + 1));
    if (!isPlainObject(value)) return value;
    const copy: Record<string, unknown> = {};
    // Own enumerable string keys in `Object.entries` order, without an array per object and a pair per key:
    // every trace event is walked, several per step.
    for (const key in value)
      if (Object.hasOwn(value, key)) copy[key] = walk((value as Record<string, unknown>)[key], depth + 1);
    return copy;
  };

  // `walk` without the copies: an object or array is copied from the first member that changed, else kept.
  const walkShared = (value: unknown, depth: number): unknown => {
    if (typeof value === 'string') return text(value);
    if (typeof value !== 'object' || value === null || depth >= MAX_STRINGS_DEPTH) return value;
    if (Array.isArray(value)) {
      let copy: unknown[] | null = null;
      for (let index = 0; index < value.length; index++) {
        const item: unknown = value[index];
        const redacted = walkShared(item, depth + 1);
        if (copy === null && redacted !== item) copy = value.slice(0, index);
        if (copy !== null) copy.push(redacted);
      }
      return copy ?? value;
    }
    if (!isPlainObject(value)) return value;
    const record = value as Record<string, unknown>;
    let copy: Record<string, unknown> | null = null;
    for (const key in record) {
      if (!Object.hasOwn(record, key)) continue;
      const inner = record[key];
      const redacted = walkShared(inner, depth + 1);
      if (copy === null && redacted !== inner) {
        copy = {};
        // The members before this one were unchanged: copied as they are, in the same order.
        for (const earlier in record) {
          if (earlier === key) break;
          if (Object.hasOwn(record, earlier)) copy[earlier] = record[earlier];
        }
      }
      if (copy !== null) copy[key] = redacted;
    }
    return copy ?? value;
  };

  return {
    isSecretKey,
    text,
    render,
    strings: <Value>(value: Value) => walk(value, 0) as Value,
    sharedStrings: <Value>(value: Value) => walkShared(value, 0) as Value,
  };
}

/**
 * The built-in rules alone, for code that has no loop config at hand.
 * @example
 * DEFAULT_REDACTOR.text('GET https://ada:hunter2@db.example.com'); // 'GET https://ada:[redacted]@db.example.com'
 */
export const DEFAULT_REDACTOR: Redactor = createRedactor();
