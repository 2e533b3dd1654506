/**
 * The tables `compileMachine` (compiled-step.ts) builds once per exploration and steps through hundreds of thousands of
 * times: the leaves (atomic and final states) with their candidates, and what taking each candidate does. Built by
 * compiled-leaves.ts, compiled-actions.ts, compiled-guards.ts, compiled-transitions.ts and compiled-stops.ts; read
 * by the step alone. Every object of one kind is made by one literal, so the step's reads of them stay monomorphic.
 */
import type { AnyStateNode, StateValue } from 'xstate';
import type { LoopContext, LoopEvent } from '../../../machines/types.js';

/** A named `assign` action's reducer, as XState calls it. */
export type Assignment = (args: Record<string, unknown>, params: unknown) => Partial<LoopContext>;

/** What a guard reads: the context and the event. */
export interface GuardArgs {
  context: LoopContext;
  event: LoopEvent;
}

/** A guard as XState evaluates it, for one leaf (XState's combinators read the active state). */
export type CompiledGuard = (args: GuardArgs, leaf: Leaf) => boolean;
/** The plain guard a `readingRecorded` wrapper calls (see recorded-context.ts). */
export type PlainGuard = (args: GuardArgs) => boolean;

/** An atomic or final state of the machine, with every transition it can take, deepest first. */
export interface Leaf {
  node: AnyStateNode;
  /** The leaf and its ancestors, leaf first, root last. */
  chain: AnyStateNode[];
  value: StateValue;
  valueKey: string;
  final: boolean;
  matches: (value: StateValue) => boolean;
  /** Per event type, the candidates of the leaf and its ancestors, deepest first: the first enabled one is taken. */
  on: Map<string, Candidate[]>;
  /** The eventless candidates, in the same order. */
  always: Candidate[];
  /** What ending the run here runs: every active state's exit actions. */
  finalExits: CompiledAction[];
}

/** A transition as one leaf takes it: its guard, and what taking it does. */
export interface Candidate {
  number: number;
  guard: CompiledGuard | null;
  /**
   * The plain guard of the loop machine's own `readingRecorded` wrapper, called as the wrapper calls it (one call
   * instead of three: the wrapper's params are known here), else null and `guard` is called.
   */
  plain: PlainGuard | null;
  /**
   * Whether `plain` reads the recorded context (the wrapper's params are `RECORDED`): false for the loop's own
   * `isDeadlineExceeded`, which answers the same on the context before (see `readsRecordedDeadline`).
   */
  readsRecorded: boolean;
  taken: Taken;
}

/** One action of a transition: its reducer and its params. */
export interface CompiledAction {
  assignment: Assignment;
  params: unknown;
  /** Params computed from the context and event (XState's dynamic params), else null. */
  paramsOf: ((args: GuardArgs) => unknown) | null;
}

/** What taking one transition from one leaf does: the actions in XState's order, and where it lands. */
export interface Taken {
  actions: CompiledAction[];
  leaf: number;
  final: boolean;
  /**
   * Into a final state whose exits run nothing, with the loop's `stopRun` and a fixed reason as the last action:
   * that reason, else null. `beforeStop` is `actions` without that last one.
   */
  stopReason: string | null;
  beforeStop: CompiledAction[];
  /**
   * With a `stopReason`: whether `beforeStop` is the loop machine's own `recordModelResponse` alone. A reply that stops
   * on a reason the caller knows leaves nothing but its spend, `replyUsage`: the recording is not made.
   */
  replyStop: boolean;
  /** Into a state that is not final with the loop's own `failTask` and a fixed reason as the last action: that reason. */
  failReason: string | null;
  /** When that state is the loop's task-failure state: what stopping there takes (see `TaskFailureStop`). */
  failStop: TaskFailureStop | null;
  /**
   * When the actions are the loop machine's own `recordModelFailure` alone, into a state that is not final: the first
   * eventless candidates there whose guards answer the same before that recording as after it (see
   * `answersBeforeFailure`), each into a final state by `stopRun` alone with a fixed reason. A
   * failed call that one of them stops on a reason the caller knows leaves nothing but its spend, `failureUsage`.
   */
  failureStops: Candidate[] | null;
}

/**
 * A transition whose last action is the loop's own `failTask` with a fixed reason, into a leaf whose eventless
 * candidates are exactly the loop's own `canContinueAfterTaskFailure` (on the context as it is) and then an unguarded
 * transition into a final state that runs nothing but the loop's own `stopWithTaskFailure`. `failTask` writes only
 * `failure`, `failedTasks` and `feedback`, and the guard reads only `tasks` and `taskIndex`: it answers the same
 * before `failTask` as after it. When it says no, the run stops with `stop` = the failure `failTask` records, whose
 * reason is `reason`, and the spend of the context before `failTask` (neither action touches `usage`).
 */
export interface TaskFailureStop {
  reason: string;
  /** The transition's actions without `failTask`, and `failTask` alone. */
  beforeFail: CompiledAction[];
  fail: CompiledAction[];
  canContinue: PlainGuard;
  /** The number of the unguarded transition to the final state, and the final leaf. */
  stopNumber: number;
  stopLeaf: number;
}

/** Thrown while compiling a machine that uses what the table does not cover: `compileMachine` then returns null. */
export class Unsupported extends Error {}
