/**
 * What `compileMachine` (compiled-step.ts) gives `verify`'s exploration: the loop machine's macrostep as a table,
 * and the states it steps through, read without an XState snapshot.
 */
import type { AnyTransitionDefinition, StateValue } from 'xstate';
import type { LoopSnapshot } from '../../../machines/pending-effect.js';
import type { LoopContext, LoopEvent } from '../../../machines/types.js';

/** A state the exploration reached: what keys, outcomes and the report read of it, without an XState snapshot. */
export interface SteppedState {
  leaf: number;
  value: LoopSnapshot['value'];
  status: 'active' | 'done';
  context: LoopContext;
  output: LoopSnapshot['output'];
  matches(value: StateValue): boolean;
}

/** Where one macrostep left the machine. The compiled machine reuses one of these: read it before the next step. */
export interface StepResult {
  leaf: number;
  context: LoopContext;
  /**
   * The run's usage after the step: `context.usage`, or, when it stopped on a reason the caller knows, the finished
   * run's (a reply that stops that way is not recorded: `context` is the one before it, and this is its spend).
   */
  usage: LoopContext['usage'];
  done: boolean;
  /**
   * When the step ended the run on a stop reason the caller said it knows (`step`'s `knownStops`), that reason, and
   * `context` is the context before the stop was recorded (and before a reply was: `usage` is the finished run's); else null.
   */
  stoppedOn: string | null;
}

/** Stop reasons whose finished state the caller already has (a finished state is keyed by its stop reason alone). */
export interface KnownStops {
  has(reason: string): boolean;
}

/** The loop machine compiled for the exploration (see `compileMachine`). */
export interface CompiledMachine {
  /** Every transition definition, numbered: `step` marks the ones it fires by these numbers. */
  definitions: readonly AnyTransitionDefinition[];
  /** The leaf (atomic state) index of a snapshot of this machine. */
  leafOf(snapshot: LoopSnapshot): number;
  /** `JSON.stringify` of a leaf's state value. */
  valueKeyOf(leaf: number): string;
  /** Whether the leaf matches `value`, as `snapshot.matches(value)` says. */
  leafMatches(leaf: number, value: StateValue): boolean;
  /**
   * The macrostep `machine.transition(snapshot, event)` takes, from the state at `leaf` with `context`; each
   * transition it fires is marked in `fired` (by its number in `definitions`).
   *
   * `knownStops`: a transition into a final state whose last action is the loop's own `stopRun` with a fixed reason
   * the caller knows (and no exit action runs) is taken without that action: the finished state's key is its reason
   * alone, `stopRun` writes only the stop record and the feedback, and its detail (`describeStop`) is most of what
   * such a step costs. The result says so (`stoppedOn`). Two thirds of an exploration's steps end a run this way.
   * So does a task that fails for good (the loop's own `failTask` with a fixed reason into a state whose only ways on
   * are the loop's own `canContinueAfterTaskFailure` and an unguarded `stopWithTaskFailure` into a final state): when
   * the task cannot continue, the run stops on the task's reason without `failTask` or the stop recorded.
   */
  step(
    leaf: number,
    context: LoopContext,
    event: LoopEvent,
    fired: Uint8Array,
    knownStops?: KnownStops | null,
  ): StepResult;
  /** The state a step reached, with the machine's output when it is done. */
  stateOf(leaf: number, context: LoopContext, done: boolean): SteppedState;
  /** The XState snapshot of a stepped state, the same as the one `machine.transition` returns. */
  snapshotOf(state: SteppedState): LoopSnapshot;
}
