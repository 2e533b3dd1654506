/**
 * A tool's JSON Schema (`inputSchema`) as the zod schema that validates the model's arguments, so bad
 * arguments come back to the model as field errors to repair, as for any tool. zod 4's `z.fromJSONSchema`
 * handles what servers send (local `$ref`/`$defs`, `additionalProperties`, enums, nullable types,
 * formats); for what it refuses (`not`, a remote `$ref`) or a root that is no object, the arguments are
 * taken as any JSON object and the server's own validation answers, with a warning that says so.
 */
import { z } from 'zod';

export type InputSchema =
  { kind: 'converted'; input: z.ZodType } | { kind: 'unchecked'; input: z.ZodType; reason: string };

/** Any JSON object: the server validates what it receives (and answers with `isError` when it refuses it). */
const ANY_OBJECT = z.looseObject({});

/**
 * The zod schema for one tool's arguments.
 * @example
 * toInputSchema({ type: 'object', properties: { id: { type: 'string' } }, required: ['id'] }).kind // 'converted'
 */
export function toInputSchema(jsonSchema: Record<string, unknown>): InputSchema {
  let input: z.ZodType;
  try {
    input = z.fromJSONSchema(jsonSchema as Parameters<typeof z.fromJSONSchema>[0]);
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
