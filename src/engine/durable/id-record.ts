/**
 * Records keyed by ids that a model, a caller or a user chose (call ids, run ids, tool names). Any string
 * is a valid id, `constructor`, `toString` and `__proto__` included, so such a record must never be a
 * plain `{}`: there `'constructor' in record` is true for every record, and `record.__proto__ = x` sets
 * the prototype instead of storing x. `z.record` builds on a plain `{}` and drops a `__proto__` key.
 */
import { z } from 'zod';

/** Whether `record` has its own entry for `id`: never true for a member of `Object.prototype`. */
export function hasId(record: object, id: string): boolean {
  return Object.hasOwn(record, id);
}

/** The value schema of each schema `idRecordSchema` made (as-is-check.ts reads it). */
const idRecordValues = new WeakMap<z.ZodType, z.ZodType>();

/**
 * The schema of the values, when `schema` is one `idRecordSchema` made; undefined for any other.
 * @example
 * idRecordValueSchema(idRecordSchema(z.number())); // z.number()
 */
export function idRecordValueSchema(schema: z.ZodType): z.ZodType | undefined {
  return idRecordValues.get(schema);
}

/**
 * A zod schema of a JSON object keyed by ids: every own key is kept (`__proto__` too) and each value is
 * checked with `value`; the output has no prototype, so no id can name an inherited member.
 * @example
 * const holds = idRecordSchema(z.number()).parse(JSON.parse('{"__proto__": 1}')); // holds['__proto__'] === 1
 */
export function idRecordSchema<Value extends z.ZodType>(
  value: Value,
  expected = 'an object keyed by id',
): z.ZodType<Record<string, z.output<Value>>, Record<string, z.input<Value>>> {
  const schema = z.unknown().transform((input, context) => {
    if (typeof input !== 'object' || input === null || Array.isArray(input)) {
      context.issues.push({ code: 'custom', message: `expected ${expected}`, input });
      return z.NEVER;
    }
    const output = Object.create(null) as Record<string, z.output<Value>>;
    for (const id of Object.keys(input)) {
      const parsed = value.safeParse((input as Record<string, unknown>)[id]);
      if (parsed.success) output[id] = parsed.data;
      else
        for (const issue of parsed.error.issues) context.issues.push({ ...issue, path: [id, ...issue.path] } as never);
    }
    return output;
  }) as unknown as z.ZodType<Record<string, z.output<Value>>, Record<string, z.input<Value>>>;
  idRecordValues.set(schema, value);
  return schema;
}
