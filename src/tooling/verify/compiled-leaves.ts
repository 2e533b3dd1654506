/**
 * The leaves of a statechart the compiled step covers (see compiled-step.ts): its atomic and final states, numbered
 * in document order, each with its chain of ancestors and its state value; and the check that the statechart is one
 * the table covers (no parallel or history states, final states at the top only, no invoke or delayed transitions,
 * exact event types, external transitions with one target).
 */
import { matchesState, type AnyStateNode, type StateValue } from 'xstate';
import { Unsupported, type Leaf } from './compiled-table.js';

/** Whether `ancestor` is a proper ancestor of `node`. */
export const isDescendant = (node: AnyStateNode, ancestor: AnyStateNode): boolean => {
  for (let parent = node.parent; parent !== undefined; parent = parent.parent) if (parent === ancestor) return true;
  return false;
};

function valueOf(node: AnyStateNode): StateValue {
  let value: StateValue = node.key;
  for (let parent = node.parent; parent?.parent !== undefined; parent = parent.parent)
    value = { [parent.key]: value } as StateValue;
  return value;
}

/**
 * Throws `Unsupported` (compiled-table.ts) when `node` or a state below it uses what the compiled step does not cover.
 *
 * @example
 * checkCovered(loopMachine.root); // returns: the loop machine is covered
 */
export function checkCovered(node: AnyStateNode): void {
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
  for (const child of Object.values(node.states)) checkCovered(child);
}

/** The leaves below `root`, in document order, and each one's number by its state node. */
export interface Leaves {
  leaves: Leaf[];
  leafIndex: Map<AnyStateNode, number>;
}

/**
 * The leaves below `root`, with no candidates yet (compiled-transitions.ts fills them in).
 *
 * @example
 * const { leaves } = collectLeaves(loopMachine.root);
 * leaves.find((leaf) => leaf.valueKey === '{"RUNNING":"deciding"}')?.final; // false
 */
export function collectLeaves(root: AnyStateNode): Leaves {
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
      leaves.push({
        node,
        chain,
        value,
        valueKey: JSON.stringify(value),
        final: node.type === 'final',
        matches: (test) => leafMatches(test, value),
        on: new Map(),
        always: [],
        finalExits: [],
      });
    }
    for (const child of children) collect(child);
  };
  collect(root);
  return { leaves, leafIndex };
}

/**
 * `matchesState(test, value)` without its parsing: a test that is a state name with no `.` or `\\` (as
 * `getPendingEffect`'s are) is that name, so it is compared as it is; any other test goes to XState's own.
 * Each resting state asks this several times, in every exploration.
 *
 * @example
 * leafMatches('RUNNING', { RUNNING: 'deciding' }); // true
 */
export function leafMatches(test: StateValue, value: StateValue): boolean {
  if (typeof test === 'string') {
    if (test.includes('.') || test.includes('\\')) return matchesState(test, value);
    return typeof value === 'string' ? value === test : test in value;
  }
  // A snapshot given as the test reads as its value: XState's own says so.
  if (test === null || typeof test !== 'object' || 'machine' in test) return matchesState(test, value);
  if (typeof value === 'string') return false;
  for (const key of Object.keys(test))
    if (!(key in value) || !leafMatches(test[key] as StateValue, value[key] as StateValue)) return false;
  return true;
}
