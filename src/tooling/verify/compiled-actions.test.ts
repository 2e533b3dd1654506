import { describe, expect, it } from 'vitest';
import { assign, createMachine, raise } from 'xstate';
import { stopRun } from '../../../actions/control.js';
import { loopMachine } from '../../../machines/loop-machine.js';
import { createActionCompiler } from './compiled-actions.js';
import { Unsupported } from './compiled-table.js';

const loopActions = () =>
  createActionCompiler(loopMachine.root, loopMachine.implementations.actions as Record<string, unknown>);

describe('createActionCompiler', () => {
  it("looks every named action of the loop machine up as its assign's reducer", () => {
    const { assignments } = loopActions();
    expect([...assignments.keys()].sort()).toEqual(Object.keys(loopMachine.implementations.actions).sort());
    expect(assignments.get('stopRun')).toBe(stopRun);
  });

  it('compiles a name, a name with static params and one with dynamic params, in order', () => {
    const { compile, assignments } = loopActions();
    const paramsOf = () => ({ reason: 'max_steps' });
    const [plain, fixed, dynamic] = compile([
      'recordModelFailure',
      { type: 'stopRun', params: { reason: 'cancelled' } },
      { type: 'stopRun', params: paramsOf },
    ]);
    expect(plain).toEqual({ assignment: assignments.get('recordModelFailure'), params: undefined, paramsOf: null });
    expect(fixed).toEqual({ assignment: stopRun, params: { reason: 'cancelled' }, paramsOf: null });
    expect(dynamic).toEqual({ assignment: stopRun, params: undefined, paramsOf });
  });

  it('declines an action name it does not have', () => {
    expect(() => loopActions().compile(['noSuchAction'])).toThrow(Unsupported);
  });

  const machineWith = (actions: Record<string, unknown>, used: unknown) =>
    createMachine(
      { initial: 'a', states: { a: { on: { go: { target: 'b', actions: used as never } } }, b: {} } },
      { actions: actions as never },
    );

  it('declines a named action that is not an assign, even when no transition runs it', () => {
    const machine = machineWith({ x: assign(() => ({})), send: raise({ type: 'y' }) }, 'x');
    expect(() => createActionCompiler(machine.root, machine.implementations.actions)).toThrow(Unsupported);
  });

  it('declines a statechart whose transition runs an inline action', () => {
    const inline = machineWith(
      { x: assign(() => ({})) },
      assign(() => ({})),
    );
    expect(() => createActionCompiler(inline.root, inline.implementations.actions)).toThrow(Unsupported);
    const entry = createMachine(
      { initial: 'a', states: { a: { entry: 'nowhere' } } },
      { actions: { x: assign(() => ({})) } as never },
    );
    expect(() => createActionCompiler(entry.root, entry.implementations.actions)).toThrow(Unsupported);
  });

  it('accepts a statechart whose every action is a named assign', () => {
    const machine = machineWith({ x: assign(() => ({})) }, 'x');
    expect(createActionCompiler(machine.root, machine.implementations.actions).compile(['x'])).toHaveLength(1);
  });
});
