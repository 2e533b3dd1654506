/**
 * The loop machine's macrostep as a table, for `verify`'s exploration: XState's `machine.transition`
 * builds several snapshots, node sets and an inspection event per microstep, which is most of what an
 * exhaustive exploration of hundreds of thousands of transitions costs. This takes the same macrostep
 * off the machine's own definition (its state nodes, transition definitions, guards and `assign` reducers,
 * run as XState runs them), with the exit and entry sets of each transition worked out once.
 *
 * It covers the statecharts the loop machine is: compound states without parallel or history nodes,
 * final states only at the top, external transitions, `assign` actions only, exact event types. For any
 * other machine `compileMachine` returns null and the exploration goes through XState.
 */
import { matchesState, type AnyStateNode, type AnyTransitionDefinition, type StateValue } from 'xstate';
import type { LoopMachine } from '../../../machines/loop-machine.js';
import type { LoopSnapshot } from '../../../machines/pending-effect.js';
import type { LoopContext, LoopEvent } from '../../../machines/types.js';

/** A state the exploration reached, as far as keys and the next step read it. */
export interface SteppedState {
  leaf: number;
  value: LoopSnapshot['value'];
  status: 'active' | 'done';
  context: LoopContext;
  output: unknown;
  matches(value: StateValue): boolean;
}

export interface CompiledStep {
  next: SteppedState;
  fired: AnyTransitionDefinition[];
}

export interface CompiledMachine {
  /** The leaf (atomic state) index of a snapshot of this machine. */
  leafOf(snapshot: LoopSnapshot): number;
  /** The macrostep `machine.transition(snapshot, event)` takes, from the state at `leaf` with `context`. */
  step(leaf: number, context: LoopContext, event: LoopEvent): CompiledStep;
  /** The XState snapshot of a stepped state, the same as the one `machine.transition` returns. */
  snapshotOf(state: SteppedState): LoopSnapshot;
}

type Action = AnyTransitionDefinition['actions'][number];
type Assignment = (args: Record<string, unknown>, params: unknown) => Partial<LoopContext>;

interface Leaf {
  node: AnyStateNode;
  /** The leaf and its ancestors, leaf first, root last. */
  chain: AnyStateNode[];
  value: StateValue;
  final: boolean;
  matches: (value: StateValue) => boolean;
}

/** What taking one transition from one leaf does: the actions in XState's order, and where it lands. */
interface Taken {
  actions: Action[];
  leaf: number;
  final: boolean;
}

class Unsupported extends Error {}

const isDescendant = (node: AnyStateNode, ancestor: AnyStateNode): boolean => {
  for (let parent = node.parent; parent !== undefined; parent = parent.parent) if (parent === ancestor) return true;
  return false;
};

function valueOf(node: AnyStateNode): StateValue {
  let value: StateValue = node.key;
  for (let parent = node.parent; parent?.parent !== undefined; parent = parent.parent)
    value = { [parent.key]: value } as StateValue;
  return value;
}

function checkNode(node: AnyStateNode): void {
  if (node.type === 'parallel' || node.type === 'history') throw new Unsupported(`${node.type} state ${node.id}`);
  if (node.type === 'final' && node.parent?.parent !== undefined)
    throw new Unsupported(`nested final state ${node.id}`);
  if ((node.invoke?.length ?? 0) > 0 || node.after.length > 0) throw new Unsupported(`invoke or after in ${node.id}`);
  for (const key of node.transitions.keys()) if (key.includes('*')) throw new Unsupported(`descriptor ${key}`);
  for (const definition of [...[...node.transitions.values()].flat(), ...(node.always ?? [])]) {
    if (definition.target === undefined || definition.target.length !== 1)
      throw new Unsupported(`a transition of ${node.id} without exactly one target`);
    const target = definition.target[0] as AnyStateNode;
    if (target === definition.source || isDescendant(target, definition.source))
      throw new Unsupported(`an internal transition of ${node.id}`);
  }
  for (const child of Object.values(node.states)) checkNode(child);
}

/** The compiled macrostep of `machine`, or null when it uses what this table does not cover (see the module comment). */
export function compileMachine(machine: LoopMachine): CompiledMachine | null {
  try {
    return compile(machine);
  } catch (error) {
    if (error instanceof Unsupported) return null;
    throw error;
  }
}

function compile(machine: LoopMachine): CompiledMachine {
  const root = machine.root;
  checkNode(root);
  const implementations = machine.implementations as {
    guards: Record<string, unknown>;
    actions: Record<string, unknown>;
  };
  const leaves: Leaf[] = [];
  const leafIndex = new Map<AnyStateNode, number>();
  const collect = (node: AnyStateNode) => {
    const children = Object.values(node.states);
    if (children.length === 0 && node !== root) {
      const chain: AnyStateNode[] = [];
      for (let current: AnyStateNode | undefined = node; current !== undefined; current = current.parent)
        chain.push(current);
      const value = valueOf(node);
      leafIndex.set(node, leaves.length);
      leaves.push({ node, chain, value, final: node.type === 'final', matches: (test) => matchesState(test, value) });
    }
    for (const child of children) collect(child);
  };
  collect(root);
  // Every named action must be an `assign`: anything else would run outside the context, which a transition table cannot.
  const assignments = new Map<string, Assignment>();
  for (const [name, action] of Object.entries(implementations.actions)) {
    const assign = action as { type?: unknown; assignment?: unknown };
    if (typeof action !== 'function' || assign.type !== 'xstate.assign' || typeof assign.assignment !== 'function')
      throw new Unsupported(`action ${name} is not an assign with a function`);
    assignments.set(name, assign.assignment as Assignment);
  }
  const checkActions = (actions: readonly Action[]) => {
    for (const action of actions) {
      const name = typeof action === 'string' ? action : typeof action === 'object' ? action.type : null;
      if (name === null || !assignments.has(name)) throw new Unsupported(`an action that is not a named assign`);
    }
  };
  const walk = (node: AnyStateNode) => {
    checkActions(node.entry);
    checkActions(node.exit);
    if (node.type === 'compound') checkActions(node.initial.actions);
    for (const definition of [...[...node.transitions.values()].flat(), ...(node.always ?? [])])
      checkActions(definition.actions);
    for (const child of Object.values(node.states)) walk(child);
  };
  walk(root);

  const taken = new Map<AnyTransitionDefinition, Map<number, Taken>>();
  /** XState's exit set, transition content and entry set of an external transition, for one source leaf. */
  const take = (from: number, definition: AnyTransitionDefinition): Taken => {
    let byLeaf = taken.get(definition);
    if (byLeaf === undefined) taken.set(definition, (byLeaf = new Map()));
    const known = byLeaf.get(from);
    if (known !== undefined) return known;
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
    const result: Taken = { actions, leaf: landed, final: (leaves[landed] as Leaf).final };
    byLeaf.set(from, result);
    return result;
  };

  const evaluateGuard = (guard: unknown, context: LoopContext, event: LoopEvent, leaf: Leaf): boolean => {
    const inline = typeof guard === 'function';
    const named = guard as string | { type: string; params?: unknown };
    const resolved = inline ? guard : implementations.guards[typeof named === 'string' ? named : named.type];
    if (resolved === undefined) throw new Error(`Guard '${String(named)}' is not implemented.`);
    if (typeof resolved !== 'function') return evaluateGuard(resolved, context, event, leaf);
    const args = { context, event };
    if ('check' in resolved) {
      // XState's own combinators (and, or, not, stateIn) read the machine and the active state of the snapshot.
      const snapshotLike = { machine, context, value: leaf.value, _nodes: leaf.chain, matches: leaf.matches };
      return (resolved as { check: (...args: unknown[]) => boolean }).check(snapshotLike, args, resolved);
    }
    const params =
      inline || typeof named === 'string'
        ? undefined
        : 'params' in named
          ? typeof named.params === 'function'
            ? (named.params as (args: unknown) => unknown)(args)
            : named.params
          : undefined;
    return (resolved as (args: unknown, params: unknown) => boolean)(args, params);
  };

  const runActions = (actions: readonly Action[], context: LoopContext, event: LoopEvent): LoopContext => {
    let current = context;
    for (const action of actions) {
      const named = action as string | { type: string; params?: unknown };
      const name = typeof named === 'string' ? named : named.type;
      const params =
        typeof named === 'string' || !('params' in named)
          ? undefined
          : typeof named.params === 'function'
            ? (named.params as (args: unknown) => unknown)({ context: current, event })
            : named.params;
      const assignment = assignments.get(name) as Assignment;
      const update = assignment(
        { context: current, event, spawn: noSpawn, self: undefined, system: undefined },
        params,
      );
      // What XState's assign does (`Object.assign({}, context, update)`); a spread is V8's fast copy of it.
      current = { ...current, ...update };
    }
    return current;
  };

  const output = (context: LoopContext, leaf: Leaf): unknown => {
    const mapper: unknown = root.output;
    if (typeof mapper !== 'function') return mapper;
    const event = { type: `xstate.done.state.${leaf.node.id}`, output: undefined };
    return (mapper as (args: unknown) => unknown)({ context, event, self: undefined });
  };

  const select = (
    candidates: readonly AnyTransitionDefinition[] | undefined,
    context: LoopContext,
    event: LoopEvent,
    leaf: Leaf,
  ) => {
    if (candidates === undefined) return undefined;
    for (const candidate of candidates)
      if (candidate.guard === undefined || evaluateGuard(candidate.guard, context, event, leaf)) return candidate;
    return undefined;
  };

  return {
    leafOf(snapshot) {
      const node = snapshot._nodes.find((candidate) => candidate.type === 'atomic' || candidate.type === 'final');
      const index = node === undefined ? undefined : leafIndex.get(node);
      if (index === undefined) throw new Error(`no leaf in ${JSON.stringify(snapshot.value)}`);
      return index;
    },
    step(from, context, event) {
      const fired: AnyTransitionDefinition[] = [];
      let leafNumber = from;
      let leaf = leaves[from] as Leaf;
      let current = context;
      let done = leaf.final;
      const apply = (definition: AnyTransitionDefinition) => {
        fired.push(definition);
        const result = take(leafNumber, definition);
        current = runActions(result.actions, current, event);
        leafNumber = result.leaf;
        leaf = leaves[leafNumber] as Leaf;
        if (result.final) done = true;
      };
      // The event: the deepest state with an enabled candidate for it takes it.
      for (const node of leaf.chain) {
        const chosen = select(node.transitions.get(event.type), current, event, leaf);
        if (chosen !== undefined) {
          apply(chosen);
          break;
        }
      }
      // Then eventless transitions (their guards see the same event), until none is enabled or the machine is done.
      while (!done) {
        let chosen: AnyTransitionDefinition | undefined;
        for (const node of leaf.chain) {
          chosen = select(node.always, current, event, leaf);
          if (chosen !== undefined) break;
        }
        if (chosen === undefined) break;
        apply(chosen);
      }
      // Entering a final state ends the run: every active state's exit actions, then the machine's output.
      if (done && !(leaves[from] as Leaf).final) {
        const exits: Action[] = [];
        for (const node of leaf.chain) exits.push(...node.exit);
        current = runActions(exits, current, event);
      }
      const finalLeaf = leaf;
      return {
        next: {
          leaf: leafNumber,
          value: finalLeaf.value as LoopSnapshot['value'],
          status: done ? 'done' : 'active',
          context: current,
          output: done ? output(current, finalLeaf) : undefined,
          matches: finalLeaf.matches,
        },
        fired,
      };
    },
    snapshotOf(state) {
      return machine.resolveState({
        value: state.value,
        context: state.context,
        status: state.status,
        output: state.output,
        historyValue: {},
      } as never) as LoopSnapshot;
    },
  };
}

function noSpawn(): never {
  throw new Error('verify explores the loop machine without spawning actors');
}
