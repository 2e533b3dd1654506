/**
 * A tool's JSON Schema (`inputSchema`) as the zod schema that validates the model's arguments, so bad
 * arguments come back to the model as field errors to repair, as for any tool. zod 4's `z.fromJSONSchema`
 * handles what servers send (local `$ref`/`$defs`, `additionalProperties`, enums, nullable types,
 * formats; local `$ref`s into either `definitions` or `$defs`, whatever the declared dialect, since
 * generators mix them); for what it refuses (`not`, a remote `$ref`) or a root that is no object, the arguments are
 * taken as any JSON object and the server's own validation answers, with a warning that says so.
 */
import { z } from 'zod';

export type InputSchema =
  { kind: 'converted'; input: z.ZodType } | { kind: 'unchecked'; input: z.ZodType; reason: string };

/** Any JSON object: the server validates what it receives (and answers with `isError` when it refuses it). */
const ANY_OBJECT = z.looseObject({});

/** Dialects before 2019-09 keep local definitions under `definitions`; later ones under `$defs`. */
const OLD_DIALECT = /draft-0[3-7]/;

/** `#/definitions/X` and `#/$defs/X` refs, rewritten to the keyword of `target`, at any depth. */
function rewriteRefs(value: unknown, from: string, to: string): unknown {
  if (Array.isArray(value)) return value.map((item: unknown) => rewriteRefs(item, from, to));
  if (typeof value !== 'object' || value === null) return value;
  return Object.fromEntries(
    Object.entries(value).map(([key, inner]) => [
      key,
      key === '$ref' && typeof inner === 'string' && inner.startsWith(`#/${from}/`)
        ? `#/${to}/${inner.slice(from.length + 3)}`
        : rewriteRefs(inner, from, to),
    ]),
  );
}

/**
 * The schema with its local definitions under the keyword its dialect reads (zod resolves a `$ref` only
 * there): a draft-07 schema with `$defs`, or one without `$schema` (2020-12) that uses `definitions`.
 */
function withDefinitionsWhereRead(jsonSchema: Record<string, unknown>): Record<string, unknown> {
  const dialect = typeof jsonSchema.$schema === 'string' ? jsonSchema.$schema : '';
  const [read, other] = OLD_DIALECT.test(dialect) ? ['definitions', '$defs'] : ['$defs', 'definitions'];
  if (typeof jsonSchema[other] !== 'object' || jsonSchema[other] === null) return jsonSchema;
  const { [other]: moved, ...rest } = rewriteRefs(jsonSchema, other, read) as Record<string, unknown>;
  return { ...rest, [read]: { ...(moved as object), ...(rest[read] as object | undefined) } };
}

/**
 * The zod schema for one tool's arguments.
 * @example
 * toInputSchema({ type: 'object', properties: { id: { type: 'string' } }, required: ['id'] }).kind // 'converted'
 */
export function toInputSchema(jsonSchema: Record<string, unknown>): InputSchema {
  let input: z.ZodType;
  try {
    input = z.fromJSONSchema(withDefinitionsWhereRead(jsonSchema) as Parameters<typeof z.fromJSONSchema>[0]);
  } catch (error) {
    return { kind: 'unchecked', input: ANY_OBJECT, reason: (error as Error).message };
  }
  // Tool arguments are one JSON object; a schema whose root is not one (or cannot be written back) is not checked here.
  try {
    const written = z.toJSONSchema(input, { io: 'input' }) as { type?: unknown };
    if (written.type !== 'object')
      return { kind: 'unchecked', input: ANY_OBJECT, reason: 'its root does not describe one JSON object' };
  } catch (error) {
    return { kind: 'unchecked', input: ANY_OBJECT, reason: (error as Error).message };
  }
  return { kind: 'converted', input };
}
