import { describe, expect, it } from 'vitest';
import { createMachine, matchesState, type AnyStateNode, type StateValue } from 'xstate';
import { loopMachine } from '../../../machines/loop-machine.js';
import { checkCovered, collectLeaves, isDescendant, leafMatches } from './compiled-leaves.js';
import { Unsupported } from './compiled-table.js';

describe('collectLeaves', () => {
  it('numbers the atomic and final states in document order, each with its value and its chain up to the root', () => {
    const machine = createMachine({
      initial: 'a',
      states: {
        a: { initial: 'x', states: { x: {}, y: { initial: 'p', states: { p: {}, q: {} } } } },
        b: {},
        done: { type: 'final' },
      },
    });
    const { leaves, leafIndex } = collectLeaves(machine.root);
    expect(leaves.map((leaf) => leaf.value)).toEqual([{ a: 'x' }, { a: { y: 'p' } }, { a: { y: 'q' } }, 'b', 'done']);
    expect(leaves.map((leaf) => leaf.valueKey)).toEqual(leaves.map((leaf) => JSON.stringify(leaf.value)));
    expect(leaves.map((leaf) => leaf.final)).toEqual([false, false, false, false, true]);
    for (const [index, leaf] of leaves.entries()) {
      expect(leafIndex.get(leaf.node)).toBe(index);
      expect(leaf.chain[0]).toBe(leaf.node);
      expect(leaf.chain.at(-1)).toBe(machine.root);
      for (let position = 1; position < leaf.chain.length; position += 1)
        expect(leaf.chain[position]).toBe((leaf.chain[position - 1] as AnyStateNode).parent);
      expect([leaf.on.size, leaf.always.length, leaf.finalExits.length]).toEqual([0, 0, 0]);
      // Its own value matches, and so does each ancestor's name; a sibling's does not.
      expect(leaf.matches(leaf.value)).toBe(true);
    }
    expect((leaves[1] as (typeof leaves)[number]).matches('a.y')).toBe(true);
    expect((leaves[1] as (typeof leaves)[number]).matches({ a: 'x' })).toBe(false);
  });

  it("gives every leaf of the loop machine once, the value XState's snapshot of it has", () => {
    const { leaves } = collectLeaves(loopMachine.root);
    const atomic: AnyStateNode[] = [];
    const walk = (node: AnyStateNode) => {
      const children = Object.values(node.states);
      if (children.length === 0) atomic.push(node);
      children.forEach(walk);
    };
    walk(loopMachine.root);
    expect(leaves.map((leaf) => leaf.node)).toEqual(atomic);
    for (const leaf of leaves) {
      const snapshot = loopMachine.resolveState({ value: leaf.value, context: {} as never });
      expect(snapshot.value).toEqual(leaf.value);
      expect(snapshot._nodes).toContain(leaf.node);
    }
  });
});

describe('checkCovered', () => {
  it('passes the loop machine', () => {
    expect(() => checkCovered(loopMachine.root)).not.toThrow();
  });

  const uncovered: Array<[string, Parameters<typeof createMachine>[0]]> = [
    ['a parallel state', { type: 'parallel', states: { a: {}, b: {} } }],
    ['a history state', { initial: 'a', states: { a: {}, h: { type: 'history' } } }],
    ['a nested final state', { initial: 'a', states: { a: { initial: 'x', states: { x: { type: 'final' } } } } }],
    ['an invoked actor', { initial: 'a', states: { a: { invoke: { src: 'x' } } } }],
    ['a delayed transition', { initial: 'a', states: { a: { after: { 10: 'b' } }, b: {} } }],
    ['a wildcard event', { initial: 'a', states: { a: { on: { '*': 'b' } }, b: {} } }],
    ['a transition without a target', { initial: 'a', states: { a: { on: { go: { actions: 'x' } } } } }],
    ['a self transition', { initial: 'a', states: { a: { on: { go: 'a' } } } }],
    [
      'a transition into a child',
      { initial: 'a', states: { a: { initial: 'x', on: { go: '.y' }, states: { x: {}, y: {} } } } },
    ],
  ];
  for (const [what, config] of uncovered)
    it(`declines ${what}`, () => {
      expect(() => checkCovered(createMachine(config).root)).toThrow(Unsupported);
    });

  it('covers an external transition out of a compound state into a sibling', () => {
    const machine = createMachine({
      initial: 'a',
      states: {
        a: { initial: 'x', on: { go: 'b' }, states: { x: { on: { up: '#done' } } } },
        b: {},
        done: { id: 'done', type: 'final' },
      },
    });
    expect(() => checkCovered(machine.root)).not.toThrow();
  });
});

describe('isDescendant', () => {
  it('is true of a proper ancestor only', () => {
    const machine = createMachine({ initial: 'a', states: { a: { initial: 'x', states: { x: {} } }, b: {} } });
    const a = machine.root.states.a as AnyStateNode;
    const x = a.states.x as AnyStateNode;
    expect([isDescendant(x, a), isDescendant(x, machine.root), isDescendant(x, x), isDescendant(a, x)]).toEqual([
      true,
      true,
      false,
      false,
    ]);
    expect(isDescendant(x, machine.root.states.b as AnyStateNode)).toBe(false);
  });
});

describe('leafMatches', () => {
  const values: StateValue[] = [
    'READY',
    'TERMINATED',
    { RUNNING: 'deciding' },
    { RETRY: 'backingOff' },
    { A: { B: 'c' } },
  ];
  const tests: StateValue[] = [
    'READY',
    'RUNNING',
    'RUNNING.deciding',
    'RUNNING.acting',
    'A.B',
    'A.B.c',
    'A.B.d',
    'deciding',
    '',
    'a\\.b',
    { RUNNING: 'deciding' },
    { RUNNING: 'acting' },
    { RUNNING: 'deciding.x' },
    { RETRY: 'backingOff' },
    { A: 'B' },
    { A: { B: 'c' } },
    { A: { B: 'd' } },
    { A: 'B.c' },
    { A: 'B', RUNNING: 'deciding' },
    {},
  ];

  it("answers as XState's matchesState for every test and value, state names and dotted paths alike", () => {
    for (const value of values)
      for (const test of tests)
        expect([test, value, leafMatches(test, value)]).toEqual([test, value, matchesState(test, value)]);
  });

  it('reads a snapshot given as the test as its value, as XState does', () => {
    const snapshot = { machine: {}, value: { RUNNING: 'deciding' } } as unknown as StateValue;
    expect(leafMatches(snapshot, { RUNNING: 'deciding' })).toBe(matchesState(snapshot, { RUNNING: 'deciding' }));
    expect(leafMatches(snapshot, { RUNNING: 'deciding' })).toBe(true);
    expect(leafMatches(snapshot, 'READY')).toBe(false);
  });
});
