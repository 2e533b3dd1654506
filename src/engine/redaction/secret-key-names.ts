/**
 * Which key names hold secrets, by the words they are made of, so `api_key`, `apiKey`, `x-api-key`,
 * `aws_secret_access_key` and `Authorization` match while `maxTokens`, `inputTokens`, `tokenizer`,
 * `keyboard` and `monkey` do not. Names are split into words at `_`, `-`, `.`, spaces and camelCase humps.
 */

/** Fragments that mark a secret wherever they appear in the name, separators removed (`dbPassword`, `PHPSESSID`). */
const SECRET_FRAGMENTS =
  /password|passwd|passphrase|secret(?!ar[iy])|credential|authorization|cookie|jwt|bearer|apikey|privatekey|accesskey|signingkey|encryptionkey|masterkey|sshkey|clientkey|connectionstring|connstr|sessionid|sessid|authtoken|accesstoken|refreshtoken|sessiontoken|securitytoken|csrftoken|xsrftoken/;

/** `…Token` is a secret unless it is one of these (`maxToken`, `pageToken`, a tokenizer's `eosToken`). */
const HARMLESS_TOKEN_QUALIFIERS: ReadonlySet<string> = new Set([
  'max',
  'min',
  'input',
  'output',
  'total',
  'prompt',
  'completion',
  'reasoning',
  'cached',
  'cache',
  'num',
  'count',
  'page',
  'next',
  'prev',
  'previous',
  'continuation',
  'pagination',
  'cancellation',
  'sync',
  'stop',
  'start',
  'end',
  'eos',
  'bos',
  'pad',
  'unk',
  'sep',
  'cls',
  'mask',
  'special',
]);

/** `…Tokens` (a list) is a secret only after one of these; `inputTokens` and `maxTokens` are usage counters. */
const SECRET_TOKENS_QUALIFIERS: ReadonlySet<string> = new Set([
  'auth',
  'access',
  'refresh',
  'bearer',
  'session',
  'api',
  'id',
  'oauth',
  'csrf',
]);

/** `…Key` is a secret unless it names a lookup key of data (`idempotencyKey`, `sortKey`, `publicKey`). */
const HARMLESS_KEY_QUALIFIERS: ReadonlySet<string> = new Set([
  'idempotency',
  'cache',
  'sort',
  'partition',
  'primary',
  'foreign',
  'object',
  'row',
  'lookup',
  'dedupe',
  'dedup',
  'group',
  'public',
  'map',
  'hash',
  'range',
  'index',
  'translation',
  'i18n',
  'message',
  'shortcut',
  'hot',
  'composite',
  'unique',
  's3',
  'routing',
  'shard',
  'dictionary',
  'field',
  'property',
  'query',
  'search',
  'correlation',
  'trace',
  'request',
  'event',
  'job',
  'task',
  'file',
  'path',
  'cursor',
  'next',
  'page',
  'continuation',
  'react',
  'list',
  'item',
]);

/** The last word alone marks a secret (`db_pass`, `user_pw`, `X-Amz-Signature`, `sentry_dsn`, `otp`, `card_pin`, `cvv`). */
const SECRET_LAST_WORDS: ReadonlySet<string> = new Set([
  'pass',
  'pwd',
  'pw',
  'signature',
  'sig',
  'dsn',
  'otp',
  'totp',
  'pin',
  'cvv',
  'cvc',
  'cvv2',
]);

/** After `auth`, these words make a secret (`authHeader`, `auth_code`). */
const SECRET_AFTER_AUTH: ReadonlySet<string> = new Set(['header', 'code', 'value', 'string', 'data']);

const WORD_SEPARATOR = /[^A-Za-z0-9]+|(?<=[a-z0-9])(?=[A-Z])|(?<=[A-Z])(?=[A-Z][a-z])/;

/** Names longer than this are not key names (a whole sentence used as a key): judged by fragments only. */
const MAX_SPLIT_NAME_CHARS = 128;

/**
 * The words of a key name, lower-cased: `x-api-key` → `x api key`, `secretAccessKey` → `secret access key`,
 * `HTTPHeaders` → `http headers`.
 * @example
 * keyNameWords('aws_secret_access_key') // ['aws', 'secret', 'access', 'key']
 */
export function keyNameWords(name: string): string[] {
  return name
    .split(WORD_SEPARATOR)
    .filter((word) => word !== '')
    .map((word) => word.toLowerCase());
}

/**
 * The name lower-cased with everything but letters and digits removed, for comparing names across styles.
 * @example
 * compactKeyName('Customer-SSN') === compactKeyName('customer_ssn') // true
 */
export function compactKeyName(name: string): string {
  return name.toLowerCase().replace(/[^a-z0-9]+/g, '');
}

/**
 * Whether values under this key name are secrets, by the built-in rules.
 * @example
 * isBuiltInSecretKey('secretAccessKey') // true
 * isBuiltInSecretKey('inputTokens')     // false
 */
export function isBuiltInSecretKey(name: string): boolean {
  if (SECRET_FRAGMENTS.test(compactKeyName(name))) return true;
  if (name.length > MAX_SPLIT_NAME_CHARS) return false;
  const words = keyNameWords(name);
  const last = words[words.length - 1];
  if (last === undefined) return false;
  const before = words[words.length - 2];
  if (SECRET_LAST_WORDS.has(last)) return true;
  if (last === 'token') return before === undefined || !HARMLESS_TOKEN_QUALIFIERS.has(before);
  if (last === 'tokens') return before === undefined || SECRET_TOKENS_QUALIFIERS.has(before);
  // A bare `key` or `keys` is usually a lookup key (a cache key, an S3 object key), not a credential.
  if (last === 'key' || last === 'keys') return before !== undefined && !HARMLESS_KEY_QUALIFIERS.has(before);
  if (last === 'auth') return before !== undefined;
  return words.some(
    (word, index) => word === 'pwd' || (word === 'auth' && SECRET_AFTER_AUTH.has(words[index + 1] ?? '')),
  );
}
