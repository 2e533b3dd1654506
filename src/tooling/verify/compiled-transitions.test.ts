import { describe, expect, it } from 'vitest';
import { assign, createMachine, transition, type AnyStateMachine } from 'xstate';
import type { LoopMachine } from '../../../machines/loop-machine.js';
import { createActionCompiler } from './compiled-actions.js';
import { collectLeaves } from './compiled-leaves.js';
import type { Candidate, Leaf } from './compiled-table.js';
import { compileTransitions } from './compiled-transitions.js';

/** An action that writes its own name to the context's log, so the order XState runs them in can be read. */
const logs = (name: string) =>
  assign(({ context }: { context: { log: string[] } }) => ({ log: [...context.log, name] }));
const names = ['xA', 'nA', 'xB', 'nB', 'xC', 'nC', 'xD', 'nD', 'xE', 'nE', 'iB', 'iD', 'go', 'back', 'up', 'on'];

const machine = createMachine(
  {
    context: { log: [] as string[] },
    initial: 'A',
    states: {
      A: {
        entry: 'nA',
        exit: 'xA',
        on: { go: { target: 'B', actions: 'go' }, jump: { target: '#E', actions: 'up' } },
        always: { guard: 'isLong', target: 'B.D', actions: 'on' },
      },
      B: {
        entry: 'nB',
        exit: 'xB',
        initial: { target: 'C', actions: 'iB' },
        on: { back: { target: 'A', actions: 'back' } },
        states: {
          C: { entry: 'nC', exit: 'xC', on: { go: { target: 'D', actions: 'go' } } },
          D: {
            entry: 'nD',
            exit: 'xD',
            initial: { target: 'E', actions: 'iD' },
            states: { E: { id: 'E', entry: 'nE', exit: 'xE' } },
          },
        },
      },
    },
  },
  {
    actions: Object.fromEntries(names.map((name) => [name, logs(name)])) as never,
    guards: { isLong: ({ context }: { context: { log: string[] } }) => context.log.length > 20 },
  },
);

function compiled(statechart: AnyStateMachine) {
  const found = collectLeaves(statechart.root);
  const actions = createActionCompiler(statechart.root, statechart.implementations.actions as Record<string, unknown>);
  const definitions = compileTransitions(statechart as unknown as LoopMachine, found, actions);
  return { leaves: found.leaves, definitions };
}

describe('compileTransitions', () => {
  it("runs a taken transition's exits, own actions and entries in XState's order, and lands where XState does", () => {
    const { leaves } = compiled(machine);
    let checked = 0;
    for (const leaf of leaves) {
      const resting = machine.resolveState({ value: leaf.value, context: { log: [] } });
      expect(resting.value).toEqual(leaf.value);
      for (const [type, candidates] of leaf.on) {
        const [next] = transition(machine, resting, { type } as never);
        const taken = (candidates[0] as Candidate).taken;
        let context = { log: [] as string[] };
        for (const action of taken.actions)
          context = { ...context, ...action.assignment({ context, event: { type } }, action.params) };
        expect([leaf.valueKey, type, context.log]).toEqual([leaf.valueKey, type, next.context.log]);
        expect((leaves[taken.leaf] as Leaf).value).toEqual(next.value);
        checked += 1;
      }
    }
    expect(checked).toBe(5);
  });

  it('lists the candidates of the deepest state first, and numbers each definition once', () => {
    const { leaves, definitions } = compiled(machine);
    const c = leaves.find((leaf) => leaf.valueKey === '{"B":"C"}') as Leaf;
    // C's own `go` is taken before B's `back`; C has no eventless transition, and neither has B.
    expect([...c.on.keys()].sort()).toEqual(['back', 'go']);
    expect((c.on.get('go') as Candidate[]).map((candidate) => definitions[candidate.number]?.source.key)).toEqual([
      'C',
    ]);
    expect(c.always).toEqual([]);
    const a = leaves[0] as Leaf;
    expect(a.always.map((candidate) => candidate.guard !== null)).toEqual([true]);
    expect(new Set(definitions).size).toBe(definitions.length);
    const numbers = leaves.flatMap((leaf) => [...[...leaf.on.values()].flat(), ...leaf.always].map((x) => x.number));
    expect(new Set(numbers)).toEqual(new Set(definitions.keys()));
    // Ending the run in E exits every active state, deepest first.
    const e = leaves.find((leaf) => leaf.valueKey === '{"B":{"D":"E"}}') as Leaf;
    expect(e.finalExits.map((action) => names.find((name) => action.assignment === assignmentOf(name)))).toEqual([
      'xE',
      'xD',
      'xB',
    ]);
  });
});

const assignmentOf = (name: string) =>
  (machine.implementations.actions[name] as unknown as { assignment: unknown }).assignment;
