/**
 * A run's loop machine without an XState actor, for a run that no journal persists and no inspector watches:
 * the snapshot in a field, each event taken by the machine's own `transition` (XState's macrostep: the same
 * microsteps, guards, assigns and output an actor computes). An actor adds what such a run never uses (a system
 * with its registry and scheduler, a mailbox, observers, inspection events) and is made, started and stopped
 * once a run: about a quarter of what a one-step run costs (−27 to −30 % without it, bench/RESULTS.md), and its
 * objects are held while the run waits.
 */
import type { Actor, AnyActorScope } from 'xstate';
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
 * delays and no inspector. One for every run, concurrent runs included: a microstep sets and restores
 * `actionExecutor` around itself and transitions never interleave, and what keeps runs apart is that the machine
 * stays assign-only (each run's state is its snapshot's). A machine action that kept anything on the scope
 * (`self`, `system`, an emitted event, a spawned child) would share it between runs: such a change must give
 * each run a scope of its own, or an actor.
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
 * Where a run whose transition threw without an actor continues: an actor restored from the snapshot before the
 * event (not started), and what is told once that actor took the event (the scope, not the machine, was at fault).
 */
export interface HandOver {
  actor(snapshot: LoopSnapshot): Actor<LoopMachine>;
  tookOver(problem: string): void;
}

/**
 * The loop machine of one run, without an actor. As an actor does, it takes no event once stopped or once its
 * snapshot is no longer active (a finished run). A transition that throws is taken again by an actor restored
 * from the snapshot before it (`handOver`): if the actor takes it, the scope was at fault (an XState whose
 * macrostep reads what the inert scope lacks) and the run goes on through that actor. If the actor fails too (a
 * bug in the machine, never a user's hook), or without `handOver`, the run is left in an `error` snapshot and the
 * transition's error is thrown to the caller. The driver ends a run the same way whose actor is left in an `error`
 * snapshot (an actor keeps its last state and drops later events): the run rejects with the error.
 * @example
 * const machine = new ActorlessRun(loopMachine, initialSnapshot);
 * machine.send({ type: 'run.started', at: 0, nextRequestTokens: 12 });
 */
export class ActorlessRun implements RunMachine {
  #snapshot: LoopSnapshot;
  #stopped = false;
  /** The actor the run continues in once a transition without one threw and the actor's did not. */
  #actor: Actor<LoopMachine> | null = null;

  constructor(
    private readonly machine: Pick<LoopMachine, 'transition'>,
    initial: LoopSnapshot,
    private readonly handOver?: HandOver,
  ) {
    this.#snapshot = initial;
  }

  getSnapshot(): LoopSnapshot {
    return this.#actor === null ? this.#snapshot : this.#actor.getSnapshot();
  }

  send(event: LoopEvent): void {
    if (this.#actor !== null) return this.#actor.send(event);
    const snapshot = this.#snapshot;
    if (this.#stopped || snapshot.status !== 'active') return;
    try {
      this.#snapshot = this.machine.transition(snapshot, event, inertScope);
    } catch (error) {
      if (this.#handedOver(snapshot, event, error)) return;
      this.#snapshot = { ...snapshot, status: 'error', error } as LoopSnapshot;
      throw error;
    }
  }

  /** Whether an actor restored from `snapshot` took the `event` whose transition threw without one. */
  #handedOver(snapshot: LoopSnapshot, event: LoopEvent, error: unknown): boolean {
    if (this.handOver === undefined) return false;
    let failed = false;
    let actor: Actor<LoopMachine>;
    try {
      actor = this.handOver.actor(snapshot);
      // Observed, so that an error of the actor's own is its snapshot's, not an unhandled one thrown later.
      actor.subscribe({ error: () => (failed = true) });
      actor.start();
      actor.send(event);
    } catch {
      return false;
    }
    if (failed || actor.getSnapshot().status === 'error') {
      actor.stop();
      return false;
    }
    this.#actor = actor;
    this.handOver.tookOver(
      `a run's transition without an actor threw ${error instanceof Error ? `${error.name}: ${error.message}` : String(error)}, and an actor took it`,
    );
    return true;
  }

  /** Nothing to start: the initial state was worked out once for the loop. */
  start(): void {}

  stop(): void {
    this.#stopped = true;
    this.#actor?.stop();
  }
}
