/**
 * `evaluators.chain`: an evaluator list whose every step is typed from the one before it.
 * TypeScript types the elements of an array literal independently, so in
 * `[evaluators.schema(S), evaluators.rule((out) => ...)]` nothing can tell `out` what the schema
 * produced; arguments of one call are inferred left to right, so a chain can.
 */
import type { Evaluator } from './types.js';

/**
 * Lists evaluators in run order, typing each one's input as the previous one's output: a rule
 * after a schema receives the schema's output type, with no annotation. The result is a plain
 * (frozen) array, accepted wherever `evaluate` is; up to six evaluators.
 * @example
 * const Order = z.object({ total: z.number() });
 * const loop = createLoop({ model, evaluate: evaluators.chain(evaluators.schema(Order), evaluators.rule((order) => order.total > 0, 'total must be positive')) });
 * const { output } = await loop.run({ goal }); // output: { total: number } | null
 */
export function chainEvaluators<A>(first: Evaluator<string, A>): readonly [Evaluator<string, A>];
export function chainEvaluators<A, B>(
  first: Evaluator<string, A>,
  second: Evaluator<A, B>,
): readonly [Evaluator<string, A>, Evaluator<A, B>];
export function chainEvaluators<A, B, C>(
  first: Evaluator<string, A>,
  second: Evaluator<A, B>,
  third: Evaluator<B, C>,
): readonly [Evaluator<string, A>, Evaluator<A, B>, Evaluator<B, C>];
export function chainEvaluators<A, B, C, D>(
  first: Evaluator<string, A>,
  second: Evaluator<A, B>,
  third: Evaluator<B, C>,
  fourth: Evaluator<C, D>,
): readonly [Evaluator<string, A>, Evaluator<A, B>, Evaluator<B, C>, Evaluator<C, D>];
export function chainEvaluators<A, B, C, D, E>(
  first: Evaluator<string, A>,
  second: Evaluator<A, B>,
  third: Evaluator<B, C>,
  fourth: Evaluator<C, D>,
  fifth: Evaluator<D, E>,
): readonly [Evaluator<string, A>, Evaluator<A, B>, Evaluator<B, C>, Evaluator<C, D>, Evaluator<D, E>];
export function chainEvaluators<A, B, C, D, E, F>(
  first: Evaluator<string, A>,
  second: Evaluator<A, B>,
  third: Evaluator<B, C>,
  fourth: Evaluator<C, D>,
  fifth: Evaluator<D, E>,
  sixth: Evaluator<E, F>,
): readonly [Evaluator<string, A>, Evaluator<A, B>, Evaluator<B, C>, Evaluator<C, D>, Evaluator<D, E>, Evaluator<E, F>];
export function chainEvaluators(...list: Evaluator[]): readonly Evaluator[] {
  return Object.freeze([...list]);
}
