import { describe, expect, it } from 'vitest';
import { assign, type AnyStateNode } from 'xstate';
import { failTask, stopRun, stopWithTaskFailure } from '../../../actions/control.js';
import { isDeadlineExceeded } from '../../../guards/budget.js';
import { canContinueAfterTaskFailure } from '../../../guards/decision.js';
import { isFatalModelFailure } from '../../../guards/retry.js';
import { loopMachine, type LoopMachine } from '../../../machines/loop-machine.js';
import { readingRecorded } from '../../../machines/recorded-context.js';
import { createActionCompiler } from './compiled-actions.js';
import { collectLeaves } from './compiled-leaves.js';
import { fixedFailReason, fixedStopReason, isReplyStop } from './compiled-stops.js';
import type { Assignment, Leaf } from './compiled-table.js';
import { compileTransitions } from './compiled-transitions.js';

const actions = createActionCompiler(loopMachine.root, loopMachine.implementations.actions as Record<string, unknown>);
const { leaves } = collectLeaves(loopMachine.root);
const terminated = leaves.find((leaf) => leaf.value === 'TERMINATED') as Leaf;
const exiting = { ...terminated, chain: [{ exit: ['recordInterruption'] } as unknown as AnyStateNode] };

describe('fixedStopReason', () => {
  it("names the reason of the loop's own stopRun with static params, last, into a final state that exits quietly", () => {
    const stop = { type: 'stopRun', params: { reason: 'max_steps' } };
    expect(fixedStopReason(['recordModelFailure', stop], actions.assignments, terminated)).toBe('max_steps');
    expect(fixedStopReason([stop, 'recordModelFailure'], actions.assignments, terminated)).toBeNull();
    expect(fixedStopReason(['stopRun'], actions.assignments, terminated)).toBeNull();
    expect(fixedStopReason([{ type: 'stopRun', params: () => ({}) }], actions.assignments, terminated)).toBeNull();
    expect(fixedStopReason([{ type: 'stopRun', params: { reason: 3 } }], actions.assignments, terminated)).toBeNull();
    expect(fixedStopReason([stop], actions.assignments, exiting)).toBeNull();
    expect(fixedStopReason([], actions.assignments, terminated)).toBeNull();
  });

  it('is null for a stopRun a statechart provides (checked by its function, not its name)', () => {
    const own = new Map<string, Assignment>(actions.assignments);
    own.set('stopRun', ((args, params) => stopRun(args as never, params as never)) as Assignment);
    expect(fixedStopReason([{ type: 'stopRun', params: { reason: 'max_steps' } }], own, terminated)).toBeNull();
  });
});

describe('fixedFailReason', () => {
  it("names the reason of the loop's own failTask with static params when it is the last action", () => {
    const fail = { type: 'failTask', params: { reason: 'retries_exhausted' } };
    expect(fixedFailReason(['recordModelFailure', fail], actions.assignments)).toBe('retries_exhausted');
    expect(fixedFailReason([fail, 'recordModelFailure'], actions.assignments)).toBeNull();
    expect(fixedFailReason([{ type: 'stopRun', params: { reason: 'x' } }], actions.assignments)).toBeNull();
    const own = new Map<string, Assignment>(actions.assignments);
    own.set('failTask', ((args, params) => failTask(args as never, params as never)) as Assignment);
    expect(fixedFailReason([fail], own)).toBeNull();
  });
});

describe('isReplyStop', () => {
  it("is the loop's own recordModelResponse alone before a stop with a reason", () => {
    const [recording, failure] = actions.compile(['recordModelResponse', 'recordModelFailure']);
    expect(isReplyStop('max_steps', [recording!])).toBe(true);
    expect(isReplyStop(null, [recording!])).toBe(false);
    expect(isReplyStop('max_steps', [])).toBe(false);
    expect(isReplyStop('max_steps', [recording!, failure!])).toBe(false);
    expect(isReplyStop('max_steps', [failure!])).toBe(false);
    expect(isReplyStop('max_steps', [{ ...recording!, paramsOf: () => undefined }])).toBe(false);
    const own = loopMachine.provide({ actions: { recordModelResponse: assign(() => ({})) } }) as unknown as LoopMachine;
    const theirs = createActionCompiler(own.root, own.implementations.actions as Record<string, unknown>);
    expect(isReplyStop('max_steps', theirs.compile(['recordModelResponse']))).toBe(false);
  });
});

/** Every candidate of every leaf of `machine`, compiled. */
function candidatesOf(machine: LoopMachine) {
  const found = collectLeaves(machine.root);
  compileTransitions(
    machine,
    found,
    createActionCompiler(machine.root, machine.implementations.actions as Record<string, unknown>),
  );
  return {
    leaves: found.leaves,
    all: found.leaves.flatMap((leaf) => [...[...leaf.on.values()].flat(), ...leaf.always]),
  };
}

describe('the stops found once every leaf has its candidates', () => {
  it("finds the loop's task failures that can stop, each into TERMINATED by stopWithTaskFailure", () => {
    const { leaves: compiled, all } = candidatesOf(loopMachine);
    const failing = all.filter((candidate) => candidate.taken.failStop !== null);
    expect(failing.length).toBeGreaterThan(3);
    expect(all.filter((candidate) => candidate.taken.failReason !== null)).toEqual(failing);
    for (const { taken } of failing) {
      const stop = taken.failStop!;
      expect(stop.reason).toBe(taken.failReason);
      expect(stop.canContinue).toBe(canContinueAfterTaskFailure);
      expect((compiled[stop.stopLeaf] as Leaf).value).toBe('TERMINATED');
      expect(stop.fail.map((action) => action.assignment)).toEqual([failTask]);
      expect([...stop.beforeFail, ...stop.fail]).toEqual(taken.actions);
      const onward = (compiled[taken.leaf] as Leaf).always[1]!;
      expect(stop.stopNumber).toBe(onward.number);
      expect(onward.taken.actions.map((action) => action.assignment)).toEqual([stopWithTaskFailure]);
    }
  });

  it("finds a failed call's first stops, each asked of the context before the failure is recorded", () => {
    const { all } = candidatesOf(loopMachine);
    const failures = all.filter((candidate) => candidate.taken.failureStops !== null);
    expect(failures.length).toBeGreaterThan(0);
    for (const { taken } of failures) {
      expect(taken.actions).toHaveLength(1);
      for (const stop of taken.failureStops!) {
        expect([isDeadlineExceeded, isFatalModelFailure]).toContain(stop.plain);
        expect(stop.taken.stopReason).not.toBeNull();
        expect(stop.taken.beforeStop).toEqual([]);
      }
    }
  });

  it('finds none in a statechart that brings its own task-failure guard or recordModelFailure', () => {
    const ownGuard = loopMachine.provide({
      // A wrapper as the loop's own are, of another guard: found by its function, so not the loop's.
      guards: { canContinueAfterTaskFailure: readingRecorded(() => false) },
    }) as unknown as LoopMachine;
    expect(candidatesOf(ownGuard).all.filter((candidate) => candidate.taken.failStop !== null)).toEqual([]);
    const ownRecording = loopMachine.provide({
      actions: { recordModelFailure: assign(() => ({})) },
    }) as unknown as LoopMachine;
    expect(candidatesOf(ownRecording).all.filter((candidate) => candidate.taken.failureStops !== null)).toEqual([]);
  });
});
