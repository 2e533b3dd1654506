/**
 * Every transition of a covered statechart as each leaf takes it (see compiled-step.ts): its guard, and XState's exit
 * set, transition content and entry set worked out once, in the order XState runs them. Fills in each leaf's
 * candidates by event type and its eventless ones, deepest state first, and numbers every transition definition.
 */
import type { AnyStateNode, AnyTransitionDefinition } from 'xstate';
import type { LoopMachine } from '../../../machines/loop-machine.js';
import type { Action, ActionCompiler } from './compiled-actions.js';
import { createGuardCompiler } from './compiled-guards.js';
import { isDescendant, type Leaves } from './compiled-leaves.js';
import { addLaterStops, fixedFailReason, fixedStopReason, isReplyStop } from './compiled-stops.js';
import type { Candidate, CompiledGuard, Leaf, Taken } from './compiled-table.js';

/**
 * Gives every leaf of `machine` its candidates (`on`, `always`) and its final exits, and returns every transition
 * definition, numbered in the order first met: the step marks the ones it fires by these numbers.
 *
 * @example
 * const leaves = collectLeaves(loopMachine.root);
 * const definitions = compileTransitions(loopMachine, leaves, createActionCompiler(loopMachine.root, actions));
 */
export function compileTransitions(
  machine: LoopMachine,
  { leaves, leafIndex }: Leaves,
  compiler: ActionCompiler,
): AnyTransitionDefinition[] {
  const root = machine.root;
  const { assignments } = compiler;
  const compileActions = compiler.compile;

  /** XState's exit set, transition content and entry set of an external transition, for one source leaf. */
  const take = (from: number, definition: AnyTransitionDefinition): Taken => {
    const source = definition.source;
    const target = (definition.target as AnyStateNode[])[0] as AnyStateNode;
    // The domain: the nearest compound proper ancestor of the source that holds the target (the root at worst).
    let domain: AnyStateNode = root;
    for (let parent = source.parent; parent !== undefined; parent = parent.parent)
      if (isDescendant(target, parent)) {
        domain = parent;
        break;
      }
    const leaf = leaves[from] as Leaf;
    const actions: Action[] = [];
    // Exited, deepest first; then the transition's own actions.
    for (const node of leaf.chain) {
      if (node === domain) break;
      actions.push(...node.exit);
    }
    actions.push(...definition.actions);
    // Entered, outermost first: the target's ancestors below the domain, the target, then its initial descendants.
    const entered: AnyStateNode[] = [];
    for (let node: AnyStateNode | undefined = target; node !== undefined && node !== domain; node = node.parent)
      entered.unshift(node);
    let deepest = target;
    while (deepest.type === 'compound') {
      const initial = deepest.initial.target[0] as AnyStateNode;
      entered.push(initial);
      deepest = initial;
    }
    // The target and the states below it are entered by default: a compound one's initial transition runs too.
    const byDefault = entered.indexOf(target);
    entered.forEach((node, position) => {
      actions.push(...node.entry);
      if (position >= byDefault && node.type === 'compound') actions.push(...node.initial.actions);
    });
    const landed = leafIndex.get(deepest);
    if (landed === undefined) throw new Error(`no leaf ${deepest.id}`);
    const final = (leaves[landed] as Leaf).final;
    const compiled = compileActions(actions);
    const stopReason = final ? fixedStopReason(actions, assignments, leaves[landed] as Leaf) : null;
    const beforeStop = compiled.slice(0, -1);
    return {
      actions: compiled,
      leaf: landed,
      final,
      stopReason,
      beforeStop,
      replyStop: isReplyStop(stopReason, beforeStop),
      failStop: null,
      failReason: final ? null : fixedFailReason(actions, assignments),
      failureStops: null,
    };
  };

  const definitions: AnyTransitionDefinition[] = [];
  const numbers = new Map<AnyTransitionDefinition, number>();
  const numberOf = (definition: AnyTransitionDefinition) => {
    let number = numbers.get(definition);
    if (number === undefined) {
      number = definitions.length;
      definitions.push(definition);
      numbers.set(definition, number);
    }
    return number;
  };
  const guardOf = createGuardCompiler(machine);
  const candidate = (from: number, definition: AnyTransitionDefinition): Candidate => {
    let guard: CompiledGuard | null = null;
    let plain: Candidate['plain'] = null;
    let readsRecorded = false;
    if (definition.guard !== undefined) ({ guard, plain, readsRecorded } = guardOf(definition.guard));
    return { number: numberOf(definition), guard, plain, readsRecorded, taken: take(from, definition) };
  };
  leaves.forEach((leaf, from) => {
    for (const node of leaf.chain) {
      for (const [type, candidates] of node.transitions) {
        const list = leaf.on.get(type) ?? [];
        for (const definition of candidates) list.push(candidate(from, definition));
        leaf.on.set(type, list);
      }
      for (const definition of node.always ?? []) leaf.always.push(candidate(from, definition));
    }
    leaf.finalExits = compileActions(leaf.chain.flatMap((node) => node.exit));
  });
  // The task-failure stops and a failed call's stops, once every leaf's candidates are known.
  addLaterStops(leaves);
  return definitions;
}
