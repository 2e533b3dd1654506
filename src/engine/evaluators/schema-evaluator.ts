/**
 * The schema format layer: a zod schema over the parsed output. zod issues become the reason,
 * one `path: message` per issue, so the model learns exactly which field to fix.
 */
import { z } from 'zod';
import type { Evaluator, EvaluationInput, EvaluationResult } from './types.js';
import { describeZodIssues } from '../zod-issues.js';
import { parseJsonOutput } from './parse-json-output.js';

/**
 * Options of `evaluators.schema`.
 * @example
 * const options: SchemaEvaluatorOptions = { name: 'order-schema' };
 */
export interface SchemaEvaluatorOptions {
  /** Evaluator name in traces; defaults to `schema`. */
  name?: string;
}

/**
 * Formats zod issues on one line: `describeZodIssues`' `path: message` lines joined by `; `.
 * @example
 * formatZodIssues(z.safeParse(z.object({ a: z.number() }), {}).error!.issues) // 'a: Invalid input: expected number, received undefined'
 */
export function formatZodIssues(issues: readonly z.core.$ZodIssue[]): string {
  return describeZodIssues(issues).join('; ');
}

/** The model writes what the schema parses, so its input side is the answer's shape. */
function answerJsonSchema(schema: z.core.$ZodType): Record<string, unknown> | undefined {
  try {
    return z.toJSONSchema(schema, { io: 'input', unrepresentable: 'throw' }) as Record<string, unknown>;
  } catch {
    return undefined;
  }
}

/**
 * Validates the parsed output with a zod schema; later evaluators receive the schema's output
 * (defaults and transforms applied). When no format evaluator ran before it (the parsed value is
 * still the raw output text), the text is parsed as JSON first, tolerating a ```json fence or prose around one JSON value.
 * @example
 * evaluators.schema(z.object({ status: z.enum(['shipped', 'pending']), eta: z.number().int() }))
 */
export function schemaEvaluator<Schema extends z.core.$ZodType>(
  schema: Schema,
  options: SchemaEvaluatorOptions = {},
): Evaluator<unknown, z.output<Schema>> {
  let jsonSchema: Record<string, unknown> | undefined | null = null;
  return {
    name: options.name ?? 'schema',
    kind: 'format',
    /** Computed on first use; undefined for a schema JSON Schema cannot express (a custom check, a transform's output). */
    get outputJsonSchema() {
      if (jsonSchema === null) jsonSchema = answerJsonSchema(schema);
      return jsonSchema;
    },
    async evaluate(input: EvaluationInput): Promise<EvaluationResult<z.output<Schema>>> {
      let value = input.parsed;
      // Compare with the raw text rather than "is a string": a JSON string literal parsed by
      // `evaluators.json` is a string too, and must not be parsed a second time.
      if (typeof value === 'string' && value === input.output) {
        const outcome = parseJsonOutput(value);
        // A failed verdict's parsed value is never handed on as the schema's output, so it need not match the type.
        if (!outcome.ok)
          return {
            passed: false,
            reason: `output is not valid JSON: ${outcome.error}`,
            parsed: input.parsed as z.output<Schema>,
          };
        value = outcome.value;
      }
      // Async so that schemas with async refinements work too.
      const result = await z.safeParseAsync(schema, value);
      if (!result.success) {
        return {
          passed: false,
          reason: `output does not match the schema: ${formatZodIssues(result.error.issues)}`,
          parsed: value as z.output<Schema>,
        };
      }
      return { passed: true, reason: 'matches the schema', parsed: result.data };
    },
  };
}
