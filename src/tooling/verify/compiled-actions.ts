/**
 * A statechart's actions as the compiled step runs them (see compiled-step.ts): each named `assign` as its reducer and
 * its params, looked up once. Every named action must be an `assign` with a function: anything else would run outside
 * the context, which a transition table cannot, and the statechart is then explored through XState.
 */
import type { AnyStateNode, AnyTransitionDefinition } from 'xstate';
import { Unsupported, type Assignment, type CompiledAction, type GuardArgs } from './compiled-table.js';

/** An action as XState's transition definitions list it: a name, or a name with params. */
export type Action = AnyTransitionDefinition['actions'][number];

/** The reducers of a statechart's named actions, and its actions compiled by them. */
export interface ActionCompiler {
  /** Each named action's reducer (`actions/control.ts`' functions for the loop's own). */
  assignments: ReadonlyMap<string, Assignment>;
  /** `actions` as the step runs them, in order; throws `Unsupported` for one that is not a named assign. */
  compile(actions: readonly Action[]): CompiledAction[];
}

/**
 * The action compiler of `root`'s machine, whose named actions are `actions`; throws `Unsupported` when one of them
 * is not an `assign` with a function, or a state or transition below `root` runs an action that is not a named one.
 *
 * @example
 * const actions = createActionCompiler(loopMachine.root, loopMachine.implementations.actions);
 * actions.compile(['recordModelResponse'])[0]?.paramsOf; // null: no dynamic params
 */
export function createActionCompiler(root: AnyStateNode, actions: Record<string, unknown>): ActionCompiler {
  const assignments = new Map<string, Assignment>();
  for (const [name, action] of Object.entries(actions)) {
    const assign = action as { type?: unknown; assignment?: unknown };
    if (typeof action !== 'function' || assign.type !== 'xstate.assign' || typeof assign.assignment !== 'function')
      throw new Unsupported(`action ${name} is not an assign with a function`);
    assignments.set(name, assign.assignment as Assignment);
  }
  const compileAction = (action: Action): CompiledAction => {
    const named = action as string | { type: string; params?: unknown };
    const name = typeof named === 'string' ? named : typeof named === 'object' ? named.type : null;
    const assignment = name === null ? undefined : assignments.get(name);
    if (assignment === undefined) throw new Unsupported(`an action that is not a named assign`);
    const params = typeof named === 'string' || !('params' in named) ? undefined : named.params;
    return typeof params === 'function'
      ? { assignment, params: undefined, paramsOf: params as (args: GuardArgs) => unknown }
      : { assignment, params, paramsOf: null };
  };
  const compile = (list: readonly Action[]) => list.map(compileAction);
  // Every action of the statechart, taken or not: one the table cannot run declines the whole statechart.
  const walk = (node: AnyStateNode) => {
    compile(node.entry);
    compile(node.exit);
    if (node.type === 'compound') compile(node.initial.actions);
    for (const definition of [...[...node.transitions.values()].flat(), ...(node.always ?? [])])
      compile(definition.actions);
    for (const child of Object.values(node.states)) walk(child);
  };
  walk(root);
  return { assignments, compile };
}
