/**
 * Type-level only: which type a list of evaluators gives `result.output`.
 */
import type { Evaluator } from './types.js';

/**
 * What `evaluate` accepts, in a loop config or a task: one evaluator or a list, run in order.
 * @example
 * const evaluate: EvaluateOption = [evaluators.schema(z.object({ total: z.number() }))];
 */
// `any` so that evaluators of every input type fit; the output type is read back by `EvaluatorsOutput`.
// eslint-disable-next-line @typescript-eslint/no-explicit-any
export type EvaluateOption = Evaluator<any, any> | readonly Evaluator<any, any>[];

/**
 * The type an evaluator hands on.
 * @example
 * type Order = EvaluatorOutput<typeof orderSchemaEvaluator>; // z.output of its schema
 */
// `any` (an evaluator typed loosely, or no evaluate option at all) reads as unknown, never as any.
export type EvaluatorOutput<E> =
  // eslint-disable-next-line @typescript-eslint/no-explicit-any
  E extends Evaluator<any, infer Output> ? (0 extends 1 & Output ? unknown : Output) : unknown;

// Pass-through evaluators typed `unknown` (json, an unannotated rule or judge) keep the type before them.
type LastTypedOutput<List extends readonly unknown[]> = List extends readonly [...infer Rest, infer Last]
  ? unknown extends EvaluatorOutput<Last>
    ? LastTypedOutput<Rest>
    : EvaluatorOutput<Last>
  : unknown;

/**
 * The type of a completed run's output for an `evaluate` option: the output of the last evaluator
 * that declares one (`evaluators.schema` does), else `unknown`.
 * @example
 * type Output = EvaluatorsOutput<[typeof schemaEvaluator, typeof judge]>; // the schema's output
 */
export type EvaluatorsOutput<Evaluate> = Evaluate extends readonly unknown[]
  ? number extends Evaluate['length']
    ? EvaluatorOutput<Evaluate[number]>
    : LastTypedOutput<Evaluate>
  : EvaluatorOutput<Evaluate>;

/**
 * The output type of a loop: its last task's evaluators when that task has its own, else the
 * loop's. Tasks that are not a literal list (a variable typed `TaskConfig[]`, or no tasks at all)
 * are typed by the loop's evaluators, since the last task is not known.
 * @example
 * type Output = LoopOutput<[typeof schemaEvaluator], readonly TaskConfig[]>; // the schema's output
 */
export type LoopOutput<Evaluate, Tasks extends readonly unknown[]> = number extends Tasks['length']
  ? EvaluatorsOutput<Evaluate>
  : Tasks extends readonly [...unknown[], infer LastTask]
    ? LastTask extends { evaluate: infer TaskEvaluate }
      ? EvaluatorsOutput<TaskEvaluate>
      : EvaluatorsOutput<Evaluate>
    : EvaluatorsOutput<Evaluate>;

/**
 * Normalizes an `evaluate` option to a list.
 * @example
 * evaluatorList(evaluators.json()) // [evaluators.json()]
 */
export function evaluatorList(option: EvaluateOption | undefined): readonly Evaluator[] {
  if (option === undefined) return [];
  return Array.isArray(option) ? (option as readonly Evaluator[]) : [option as Evaluator];
}
