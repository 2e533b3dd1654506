/**
 * Values that look like secrets wherever they appear in text: credentials in headers, URLs and
 * connection strings, provider key shapes, JWTs and private key blocks. Every quantifier is bounded
 * or runs over a class its neighbours cannot share, so each pattern is linear in the text's length
 * (no catastrophic backtracking on a megabyte of `a` or of `Bearer `).
 */

/**
 * What a redacted value becomes; the text around it stays.
 * @example
 * expect(result.detail).toContain(`Bearer ${REDACTED}`);
 */
export const REDACTED = '[redacted]';

/**
 * One built-in rule: a global pattern and what its match becomes.
 * @example
 * const rule: ValueRule = { name: 'ticket', pattern: /\bT-\d+\b/g, replace: () => REDACTED };
 */
export interface ValueRule {
  name: string;
  pattern: RegExp;
  replace: (match: string, ...groups: (string | undefined)[]) => string;
}

const whole = () => REDACTED;

/**
 * PEM private keys; a block cut short (no END line) loses its base64 body up to the cut. The body
 * stops at the first `-----`, so a text of many BEGIN lines costs one short look each.
 */
const PRIVATE_KEY_BLOCK =
  /-----BEGIN (?:[A-Z0-9]{1,16} ){0,3}PRIVATE KEY-----(?:(?:[^-]|-(?!----)){0,16384}-----END (?:[A-Z0-9]{1,16} ){0,3}PRIVATE KEY-----|[A-Za-z0-9+/=\r\n]{0,16384})/g;

/** `Authorization: Basic …`, `Cookie: a=1; b=2`: the whole header value, to the end of its line. */
const CREDENTIAL_HEADER = /\b((?:proxy-)?authorization|(?:set-)?cookie)([ \t]{0,3}:[ \t]{0,3})([^\r\n"']{1,4096})/gi;

/** `scheme://user:password@host`: the password goes, the user and host stay. */
const URL_USER_INFO = /(?<![a-z0-9+.-])([a-z][a-z0-9+.-]{0,31}:\/\/)([^\s:@/?#]{0,256}):([^\s@/?#]{1,256})@/gi;

/** The token may contain dots but does not end with one: a sentence's full stop stays. */
const BEARER_TOKEN = /\b(bearer)(\s{1,8})[\w\-.~+/]{2,4095}[\w\-~+/]=*/gi;

const JSON_WEB_TOKEN = /(?<![\w-])eyJ[\w-]{2,8192}\.[\w-]{2,8192}\.[\w-]{0,8192}/g;

/** OpenAI, Anthropic and Stripe style secret keys (`sk-…`, `sk-proj-…`, `sk_live_…`, `rk_live_…`). */
const SK_KEY = /\b[sr]k[-_][\w-]{6,512}/g;

/** Provider tokens with a fixed, recognisable shape. */
const PROVIDER_TOKEN = new RegExp(
  [
    'gh[pousr]_[A-Za-z0-9]{16,255}', // GitHub
    'github_pat_\\w{16,255}',
    'glpat-[\\w-]{16,255}', // GitLab
    'xox[abposre]-[A-Za-z0-9-]{8,255}', // Slack
    '(?:AKIA|ASIA|ABIA|ACCA|AGPA|AIDA|AIPA|ANPA|ANVA|APKA|AROA|ASCA)[A-Z0-9]{16}(?![A-Za-z0-9])', // AWS access key ids
    'AIza[\\w-]{35}(?![\\w-])', // Google API keys
    'npm_[A-Za-z0-9]{36}(?![A-Za-z0-9])',
    'hf_[A-Za-z0-9]{30,64}(?![A-Za-z0-9])', // Hugging Face
    'whsec_[A-Za-z0-9+/=]{16,255}', // webhook signing secrets
  ]
    .map((source) => `\\b${source}`)
    .join('|'),
  'g',
);

const SLACK_WEBHOOK = /(https:\/\/hooks\.slack\.com\/services\/)[A-Za-z0-9/]{8,256}/g;

/**
 * The name and separator of a `name=value`, `name: value` or `"name": "value"` pair, in JSON, query
 * strings, connection strings and logs. Only the name is matched: the value is read by redact.ts when
 * the name is a secret's, so the value of a harmless pair is still scanned for secret pairs inside it.
 * @example
 * KEY_VALUE_NAME.exec('Password=hunter2;')?.[2] // 'Password'
 */
export const KEY_VALUE_NAME = /(?<![\w.-])(["']?)([A-Za-z_][\w.-]{0,63})\1[ \t]{0,3}[:=][ \t]{0,3}/g;

/**
 * A text without any of these cannot match a built-in rule (each needs one of them), so it skips
 * them all: most trace strings (state names, ids, tool names) cost one scan.
 * @example
 * if (MAY_HOLD_SECRET.test(text)) text = redactAll(text);
 */
export const MAY_HOLD_SECRET =
  /[:=]|[Bb][Ee][Aa][Rr][Ee][Rr]|eyJ|[sr]k[-_]|gh[pousr]_|github_pat_|glpat-|xox|A[A-Z]{3}[A-Z0-9]{16}|AIza|npm_|hf_|whsec_|-----BEGIN/;

/**
 * The built-in value rules, in the order they run. The key-name rule runs after them (see redact.ts).
 * @example
 * for (const rule of BUILT_IN_VALUE_RULES) text = text.replace(rule.pattern, rule.replace);
 */
export const BUILT_IN_VALUE_RULES: readonly ValueRule[] = [
  { name: 'private key block', pattern: PRIVATE_KEY_BLOCK, replace: whole },
  {
    name: 'credential header',
    pattern: CREDENTIAL_HEADER,
    replace: (_match, name, separator) => `${name}${separator}${REDACTED}`,
  },
  { name: 'URL password', pattern: URL_USER_INFO, replace: (_match, scheme, user) => `${scheme}${user}:${REDACTED}@` },
  { name: 'bearer token', pattern: BEARER_TOKEN, replace: (_match, scheme, space) => `${scheme}${space}${REDACTED}` },
  { name: 'JSON web token', pattern: JSON_WEB_TOKEN, replace: whole },
  // A digit tells a key (`sk-live-4eC39Hq…`) from a hyphenated word (`sk-learn`).
  { name: 'secret key', pattern: SK_KEY, replace: (match) => (/\d/.test(match) ? REDACTED : match) },
  { name: 'provider token', pattern: PROVIDER_TOKEN, replace: whole },
  { name: 'Slack webhook', pattern: SLACK_WEBHOOK, replace: (_match, prefix) => `${prefix}${REDACTED}` },
];
