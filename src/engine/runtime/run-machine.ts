/**
 * A run's loop machine without an XState actor, for a run that no journal persists and no inspector watches:
 * the snapshot in a field, each event taken by the machine's own `transition` (XState's macrostep: the same
 * microsteps, guards, assigns and output an actor computes). An actor adds what such a run never uses (a system
 * with its registry and scheduler, a mailbox, observers, inspection events) and is made, started and stopped
 * once a run: about a tenth of what a one-step run costs, and its objects are held while the run waits.
 */
import type { AnyActorScope } from 'xstate';
import type { LoopMachine, LoopSnapshot } from '../../../machines/index.js';
import type { LoopEvent } from '../../../machines/types.js';

/**
 * What the driver asks of the machine it runs: an XState actor has all of it, and so does `ActorlessRun`.
 * @example
 * const machine: RunMachine = setup.createRunMachine();
 * machine.start();
 * machine.send({ type: 'run.started', at: 0, nextRequestTokens: 12 });
 * machine.getSnapshot().value; // { RUNNING: 'deciding' }
 */
export interface RunMachine {
  getSnapshot(): LoopSnapshot;
  send(event: LoopEvent): void;
  start(): void;
  stop(): void;
}

const ignore = (): void => undefined;

/**
 * The scope XState's transition functions are given: nothing of it is read by the loop machine, whose actions
 * are all assigns (an action with an effect is run at once, as an actor runs it), which has no children, no
 * delays and no inspector. One for every run: a microstep sets and restores `actionExecutor` around itself, and
 * transitions never interleave.
 */
const inertScope = {
  self: undefined,
  id: '',
  sessionId: '',
  logger: ignore,
  defer: ignore,
  emit: ignore,
  stopChild: ignore,
  system: {
    _sendInspectionEvent: ignore,
    _unregister: ignore,
    scheduler: { schedule: ignore, cancel: ignore, cancelAll: ignore },
  },
  actionExecutor: (action: { info: unknown; params: unknown; exec?: (info: unknown, params: unknown) => void }) =>
    action.exec?.(action.info, action.params),
} as unknown as AnyActorScope;

/**
 * The loop machine of one run, without an actor. As an actor does, it takes no event once stopped or once its
 * snapshot is no longer active (a finished run). A transition that throws (a bug in the machine, never a
 * user's hook) leaves an `error` snapshot and throws to the caller, so the run rejects; an actor would report it
 * as an unhandled error and keep its last state.
 * @example
 * const machine = new ActorlessRun(loopMachine, initialSnapshot);
 * machine.send({ type: 'run.started', at: 0, nextRequestTokens: 12 });
 */
export class ActorlessRun implements RunMachine {
  #snapshot: LoopSnapshot;
  #stopped = false;

  constructor(
    private readonly machine: Pick<LoopMachine, 'transition'>,
    initial: LoopSnapshot,
  ) {
    this.#snapshot = initial;
  }

  getSnapshot(): LoopSnapshot {
    return this.#snapshot;
  }

  send(event: LoopEvent): void {
    const snapshot = this.#snapshot;
    if (this.#stopped || snapshot.status !== 'active') return;
    try {
      this.#snapshot = this.machine.transition(snapshot, event, inertScope);
    } catch (error) {
      this.#snapshot = { ...snapshot, status: 'error', error } as LoopSnapshot;
      throw error;
    }
  }

  /** Nothing to start: the initial state was worked out once for the loop. */
  start(): void {}

  stop(): void {
    this.#stopped = true;
  }
}
