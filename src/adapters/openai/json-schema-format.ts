/**
 * A task's answer schema as an OpenAI structured-output format. Strict mode (the reply is guaranteed to
 * match) needs every property required and `additionalProperties: false`, so an optional property
 * becomes required and nullable; the nulls the model then writes for them are taken out of its reply
 * again, so the task's own schema sees the answer it was written for.
 */

type JsonSchema = Record<string, unknown>;

/** Keywords strict mode refuses; a schema using one is sent non-strict (a hint, not a guarantee). */
const NOT_STRICT = new Set([
  'allOf',
  'oneOf',
  'not',
  'if',
  'then',
  'else',
  'patternProperties',
  'propertyNames',
  'dependentRequired',
  'dependentSchemas',
  'unevaluatedProperties',
  'minProperties',
  'maxProperties',
  'contains',
  'prefixItems',
]);

export interface OpenAIResponseFormat {
  name: string;
  schema: JsonSchema;
  strict: boolean;
}

const isObject = (value: unknown): value is JsonSchema =>
  typeof value === 'object' && value !== null && !Array.isArray(value);

/**
 * The format to send for `schema`, or null when OpenAI cannot take it at all (its root must be an object).
 * @example
 * toOpenAIFormat('answer', { type: 'object', properties: { note: { type: 'string' } } })
 * // { name: 'answer', strict: true, schema: { type: 'object', properties: { note: { type: ['string', 'null'] } }, required: ['note'], additionalProperties: false } }
 */
export function toOpenAIFormat(name: string, schema: JsonSchema): OpenAIResponseFormat | null {
  const { $schema: _dialect, ...root } = schema;
  if (root.type !== 'object') return null;
  const strict = strictSchema(root);
  return strict === null ? { name, schema: root, strict: false } : { name, schema: strict, strict: true };
}

/** The strict rewrite of `schema`, or null when some part of it cannot be strict. */
function strictSchema(schema: JsonSchema): JsonSchema | null {
  if (Object.keys(schema).some((key) => NOT_STRICT.has(key))) return null;
  const out: JsonSchema = { ...schema };
  if (schema.type === 'object' || isObject(schema.properties)) {
    const extra = schema.additionalProperties;
    // A map (`z.record`) or an open object cannot be strict.
    if (extra !== undefined && extra !== false) return null;
    const properties = isObject(schema.properties) ? schema.properties : {};
    const required = new Set(Array.isArray(schema.required) ? (schema.required as string[]) : []);
    const rewritten: JsonSchema = {};
    for (const [key, property] of Object.entries(properties)) {
      if (!isObject(property)) return null;
      const strict = strictSchema(property);
      if (strict === null) return null;
      rewritten[key] = required.has(key) ? strict : nullable(strict);
    }
    out.properties = rewritten;
    out.required = Object.keys(rewritten);
    out.additionalProperties = false;
  }
  if (isObject(schema.items)) {
    const items = strictSchema(schema.items);
    if (items === null) return null;
    out.items = items;
  }
  for (const keyword of ['anyOf'] as const) {
    const branches = schema[keyword];
    if (!Array.isArray(branches)) continue;
    const rewritten = branches.map((branch) => (isObject(branch) ? strictSchema(branch) : null));
    if (rewritten.some((branch) => branch === null)) return null;
    out[keyword] = rewritten;
  }
  for (const keyword of ['$defs', 'definitions'] as const) {
    const definitions = schema[keyword];
    if (!isObject(definitions)) continue;
    const rewritten: JsonSchema = {};
    for (const [key, definition] of Object.entries(definitions)) {
      const strict = isObject(definition) ? strictSchema(definition) : null;
      if (strict === null) return null;
      rewritten[key] = strict;
    }
    out[keyword] = rewritten;
  }
  return out;
}

function allowsNull(schema: JsonSchema): boolean {
  const type = schema.type;
  if (type === 'null' || (Array.isArray(type) && type.includes('null'))) return true;
  return Array.isArray(schema.anyOf) && schema.anyOf.some((branch) => isObject(branch) && allowsNull(branch));
}

function nullable(schema: JsonSchema): JsonSchema {
  if (allowsNull(schema)) return schema;
  if (typeof schema.type === 'string' && schema.enum === undefined && schema.const === undefined)
    return { ...schema, type: [schema.type, 'null'] };
  return { anyOf: [schema, { type: 'null' }] };
}

/**
 * The model's answer with the nulls strict mode forced into optional properties taken out again,
 * judged against the original schema; any text that is not JSON is returned unchanged.
 * @example
 * withoutAddedNulls('{"note":null}', { type: 'object', properties: { note: { type: 'string' } } }) // '{}'
 */
export function withoutAddedNulls(text: string, schema: JsonSchema): string {
  let value: unknown;
  try {
    value = JSON.parse(text);
  } catch {
    return text;
  }
  return strip(value, schema) ? JSON.stringify(value) : text;
}

/** Deletes added nulls in place; true when something was deleted. */
function strip(value: unknown, schema: JsonSchema): boolean {
  let changed = false;
  if (Array.isArray(value)) {
    if (isObject(schema.items)) for (const item of value) changed = strip(item, schema.items) || changed;
    return changed;
  }
  if (!isObject(value) || !isObject(schema.properties)) return false;
  const required = new Set(Array.isArray(schema.required) ? (schema.required as string[]) : []);
  for (const [key, property] of Object.entries(schema.properties)) {
    if (!isObject(property) || !Object.hasOwn(value, key)) continue;
    if (value[key] === null && !required.has(key) && !allowsNull(property)) {
      delete value[key];
      changed = true;
    } else {
      changed = strip(value[key], property) || changed;
    }
  }
  return changed;
}
