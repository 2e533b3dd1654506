/**
 * The first format layer: the output must be JSON (optionally fenced) with the required fields.
 */
import type { Evaluator, EvaluationInput, EvaluationResult } from './types.js';
import { describeJsonType, parseJsonOutput } from './parse-json-output.js';

/**
 * Options of `evaluators.json`.
 * @example
 * const options: JsonEvaluatorOptions = { requiredFields: ['status', 'eta'] };
 */
export interface JsonEvaluatorOptions {
  /**
   * Top-level keys the JSON object must have (a key present with `null` counts as present; use
   * `evaluators.schema` to constrain values).
   */
  requiredFields?: readonly string[];
  /** Evaluator name in traces; defaults to `json`. */
  name?: string;
}

/**
 * Parses the output as JSON (a ```json fence or prose around one JSON value is tolerated, see
 * `parseJsonOutput`) and checks required
 * top-level fields. Later evaluators receive the parsed value.
 * @example
 * evaluators.json({ requiredFields: ['status'] }) // fails '{"eta": 3}' with "missing required fields: status"
 */
export function jsonEvaluator(options: JsonEvaluatorOptions = {}): Evaluator {
  const requiredFields = [...(options.requiredFields ?? [])];
  return {
    name: options.name ?? 'json',
    kind: 'format',
    evaluate(input: EvaluationInput): EvaluationResult {
      // A string is text still to be parsed; anything else was already parsed by an earlier format layer.
      let value = input.parsed;
      if (typeof value === 'string') {
        const outcome = parseJsonOutput(value);
        if (!outcome.ok)
          return { passed: false, reason: `output is not valid JSON: ${outcome.error}`, parsed: input.parsed };
        value = outcome.value;
      }
      if (requiredFields.length === 0) return { passed: true, reason: 'valid JSON', parsed: value };
      if (typeof value !== 'object' || value === null || Array.isArray(value)) {
        return {
          passed: false,
          reason: `expected a JSON object with fields ${requiredFields.join(', ')}, got ${describeJsonType(value)}`,
          parsed: value,
        };
      }
      const missing = requiredFields.filter((field) => !Object.hasOwn(value as object, field));
      if (missing.length > 0)
        return { passed: false, reason: `missing required fields: ${missing.join(', ')}`, parsed: value };
      return { passed: true, reason: 'valid JSON with all required fields', parsed: value };
    },
  };
}
