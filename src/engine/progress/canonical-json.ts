/**
 * Deterministic JSON for fingerprints: equal values give equal text whatever their key order.
 */

/**
 * Serialises like `JSON.stringify` but with object keys sorted (recursively, by UTF-16 code
 * units), so `{b:1,a:2}` and `{a:2,b:1}` give the same text. Like `JSON.stringify`, `undefined`,
 * functions and symbols are dropped from objects and become `null` in arrays, non-finite numbers
 * become `null`, and `toJSON` is honoured; a top-level unserialisable value gives `null`. Throws
 * `TypeError` on circular structures and bigints.
 * @example
 * canonicalJson({ b: [1, { d: 1, c: 'é' }], a: undefined }) // '{"b":[1,{"c":"é","d":1}]}'
 */
export function canonicalJson(value: unknown): string {
  return serialize(value, '', new Set()) ?? 'null';
}

function serialize(input: unknown, key: string, ancestors: Set<object>): string | undefined {
  const value = unbox(applyToJson(input, key));
  switch (typeof value) {
    case 'string':
      return JSON.stringify(value);
    case 'number':
      return Number.isFinite(value) ? JSON.stringify(value) : 'null';
    case 'boolean':
      return value ? 'true' : 'false';
    case 'bigint':
      throw new TypeError('canonicalJson: a bigint cannot be serialised to JSON');
    case 'object':
      break;
    default:
      return undefined; // undefined, function, symbol
  }
  if (value === null) return 'null';
  if (ancestors.has(value)) throw new TypeError('canonicalJson: cannot serialise a circular structure');
  ancestors.add(value);
  let text: string;
  if (Array.isArray(value)) {
    text = `[${value.map((item, index) => serialize(item, String(index), ancestors) ?? 'null').join(',')}]`;
  } else {
    const record = value as Record<string, unknown>;
    const members: string[] = [];
    for (const name of Object.keys(record).sort()) {
      const member = serialize(record[name], name, ancestors);
      if (member !== undefined) members.push(`${JSON.stringify(name)}:${member}`);
    }
    text = `{${members.join(',')}}`;
  }
  ancestors.delete(value);
  return text;
}

function applyToJson(value: unknown, key: string): unknown {
  if (typeof value === 'object' && value !== null && typeof (value as { toJSON?: unknown }).toJSON === 'function') {
    return (value as { toJSON(key: string): unknown }).toJSON(key);
  }
  return value;
}

// JSON.stringify unwraps `new String('x')` and friends; do the same so they are not seen as objects.
function unbox(value: unknown): unknown {
  if (value instanceof String || value instanceof Number || value instanceof Boolean) return value.valueOf();
  return value;
}
