/**
 * Config-time checks of an evaluator list, run by `createLoop` before anything is spent.
 */
import type { ConfigIssue } from '../../contracts/errors.js';
import type { EvaluatorKind } from './types.js';

const EVALUATOR_KINDS: ReadonlySet<string> = new Set<EvaluatorKind>(['format', 'rule', 'judge']);

/**
 * Lists the problems of an evaluator list; empty when it is valid. Paths are relative to the list
 * (`[1].kind`, or `''` for the list as a whole) so the caller can prefix `evaluate` or
 * `tasks[0].evaluate`. An LLM judge must never be the only check.
 * @example
 * validateEvaluators([evaluators.judge({ model, criteria })])
 * // [{ path: '', message: 'an LLM judge must not be the only check: add a format (json, schema) or rule evaluator' }]
 */
export function validateEvaluators(list: readonly unknown[]): ConfigIssue[] {
  const issues: ConfigIssue[] = [];
  const kinds: string[] = [];
  list.forEach((entry, index) => {
    if (typeof entry !== 'object' || entry === null) {
      issues.push({ path: `[${index}]`, message: 'expected an evaluator object { name, kind, evaluate }' });
      return;
    }
    const candidate = entry as Record<string, unknown>;
    if (typeof candidate.name !== 'string' || candidate.name === '') {
      issues.push({ path: `[${index}].name`, message: 'expected a non-empty string' });
    }
    if (typeof candidate.kind !== 'string' || !EVALUATOR_KINDS.has(candidate.kind)) {
      issues.push({ path: `[${index}].kind`, message: "expected 'format', 'rule' or 'judge'" });
    } else {
      kinds.push(candidate.kind);
    }
    if (typeof candidate.evaluate !== 'function') {
      issues.push({ path: `[${index}].evaluate`, message: 'expected a function' });
    }
    const { samples } = candidate;
    // Undefined is the default (one verdict), never off.
    if (samples !== undefined && !(typeof samples === 'number' && Number.isInteger(samples) && samples >= 1)) {
      issues.push({ path: `[${index}].samples`, message: 'expected a positive integer (or undefined for 1)' });
    } else if (typeof samples === 'number' && samples > 1 && typeof candidate.combine !== 'function') {
      issues.push({
        path: `[${index}].combine`,
        message: 'expected a function: an evaluator with samples over 1 must combine them',
      });
    }
  });
  if (kinds.includes('judge') && kinds.every((kind) => kind === 'judge')) {
    issues.push({
      path: '',
      message: 'an LLM judge must not be the only check: add a format (json, schema) or rule evaluator',
    });
  }
  return issues;
}
