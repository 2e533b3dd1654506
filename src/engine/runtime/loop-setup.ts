/**
 * What every run of one loop starts from and no run changes: the machine's input, the limits as the
 * trace records them, the prompt version and the size of the tool specs every request carries. A loop's
 * config is fixed at `createLoop`, so these are worked out at its first run and kept beside its resolved
 * config; a run then pays only for what is its own (goal, messages, run id, signal, tenant).
 */
import { createActor, type Actor, type ActorOptions, type Snapshot } from 'xstate';
import { createInitialContext } from '../../../actions/initial-context.js';
import { loopMachine, type LoopMachine, type LoopSnapshot } from '../../../machines/index.js';
import type { LoopInput, TaskPlan } from '../../../machines/types.js';
import type { TracedLimits } from '../../contracts/trace-schema.js';
import type { ResolvedConfig } from '../config/config.js';
import { evaluatorList } from '../evaluators/index.js';
import { priceOf } from '../pricing/pricing.js';
import type { Tool } from '../tools/index.js';
import { promptVersion, tracedLimits } from '../trace/run-facts.js';
import { actorlessRunsWork, markActorlessBroken } from './actorless-probe.js';
import { ActorlessRun, type HandOver, type RunMachine } from './run-machine.js';

/** One loop's run-independent facts; see the module comment. */
export interface LoopSetup {
  /** The machine's input: limits, no-progress thresholds and the task plan (the same for every goal). */
  readonly machineInput: LoopInput;
  readonly tracedLimits: TracedLimits;
  /** The loop model has a price (else every run warns that maxCostUsd cannot see its spend). */
  readonly modelPriced: boolean;
  /** The prompt version and spec size of the tools a run offers (the loop's, plus the plan tool when on). */
  toolFacts(tools: ReadonlyMap<string, Tool>): { promptVersion: string; specChars: number };
  /**
   * A new run's actor (not started), in the machine's initial state: the state worked out once for the loop
   * (XState's initial microstep and its restore, half of making an actor), with a context of the run's own, as
   * a fresh actor would make it. A resumed run's actor restores its journal's snapshot instead (`loopMachine`).
   */
  createRunActor(inspect?: ActorOptions<LoopMachine>['inspect']): Actor<LoopMachine>;
  /**
   * A new run's machine without an actor (for a run no journal persists and no inspector watches), in the same
   * initial state as `createRunActor`'s, with a context of its own. An actor instead when the installed XState
   * failed the probe (`actorless-probe.ts`) or a run's transition without an actor threw where an actor's did not.
   */
  createRunMachine(): RunMachine;
}

const setups = new WeakMap<ResolvedConfig, LoopSetup>();

/** The task plan the machine follows: a single task `main` without `tasks`, whatever the goal. */
function taskPlans(config: ResolvedConfig): TaskPlan[] {
  const tasks = config.tasks ?? [{ id: 'main', prompt: '' }];
  return tasks.map((task) => ({
    id: task.id,
    onFailure: task.onFailure ?? 'stop',
    evaluated: (task.evaluate === undefined ? config.evaluate : evaluatorList(task.evaluate)).length > 0,
  }));
}

/** Characters of the tool specs, as the token estimate counts them. */
export function toolSpecChars(tools: ReadonlyMap<string, Tool>): number {
  let chars = 0;
  for (const tool of tools.values()) chars += JSON.stringify(tool.spec).length;
  return chars;
}

function createSetup(config: ResolvedConfig): LoopSetup {
  // Kept with the tools they were worked out from: a loop reads its tools array at each run (an MCP server's list
  // may change in place), so a run whose tools are not, one for one, the same objects works them out again.
  let facts: { tools: Tool[]; promptVersion: string; specChars: number } | null = null;
  const sameTools = (known: readonly Tool[], tools: ReadonlyMap<string, Tool>): boolean => {
    if (known.length !== tools.size) return false;
    let index = 0;
    for (const tool of tools.values()) if (tool !== known[index++]) return false;
    return true;
  };
  const machineInput: LoopInput = Object.freeze({
    limits: config.limits,
    noProgress: config.noProgress,
    tasks: Object.freeze(taskPlans(config)) as TaskPlan[],
  });
  let starting: StartingState | null = null;
  const createRunActor = (inspect?: ActorOptions<LoopMachine>['inspect']): Actor<LoopMachine> => {
    starting ??= startingState(machineInput);
    // The machine's initial actions are assigns only: the state after them is the same for every run, and
    // the context is the one part a run changes, so each run gets its own (its usage object is the run's).
    const snapshot: RunStart = { context: createInitialContext({ input: machineInput }) };
    return createActor(starting.machine, {
      input: machineInput,
      snapshot: snapshot as unknown as Snapshot<unknown>,
      ...(inspect === undefined ? {} : { inspect }),
    });
  };
  // As a resumed run's actor restores its journal's snapshot.
  const handOver: HandOver = {
    actor: (snapshot) =>
      createActor(loopMachine, { input: machineInput, snapshot: loopMachine.getPersistedSnapshot(snapshot) }),
    tookOver: markActorlessBroken,
  };
  return {
    machineInput,
    tracedLimits: Object.freeze(tracedLimits(config.limits)),
    modelPriced: priceOf(config.prices, config.model.id) !== undefined,
    toolFacts(tools) {
      if (facts === null || !sameTools(facts.tools, tools)) {
        const list = [...tools.values()];
        facts = {
          tools: list,
          promptVersion: promptVersion(
            config.instructions,
            list.map((tool) => tool.spec),
          ),
          specChars: toolSpecChars(tools),
        };
      }
      return facts;
    },
    createRunActor,
    createRunMachine() {
      if (!actorlessRunsWork()) return createRunActor();
      starting ??= startingState(machineInput);
      return new ActorlessRun(
        loopMachine,
        { ...starting.initial, context: createInitialContext({ input: machineInput }) },
        handOver,
      );
    },
  };
}

/** The loop's initial state, worked out once, and the machine whose actors start from it. */
interface StartingState {
  /** Frozen, as are its shared parts; a run's snapshot is a copy with a context of its own. */
  readonly initial: LoopSnapshot;
  readonly machine: LoopMachine;
}

/** What `createRunActor` hands its actor to restore: only the run's own context. */
interface RunStart {
  readonly context: LoopSnapshot['context'];
}

/**
 * `loopMachine` for the new runs of one loop: its `restoreSnapshot` takes a `RunStart` and returns the loop's
 * initial state with the run's context, copied from the one state XState restored once for the loop (as it
 * restores a journal's snapshot: the same value, nodes, tags, children and history). The shared parts are
 * frozen: XState makes new ones when a transition changes them, and one written in place would throw here
 * rather than reach another run. Everything else (transitions, persisting, the inspector's view) is
 * `loopMachine`'s own, and a snapshot's `machine` is `loopMachine` itself.
 */
function startingState(machineInput: LoopInput): StartingState {
  const persisted = createActor(loopMachine, { input: machineInput }).getPersistedSnapshot();
  const restored = createActor(loopMachine, { input: machineInput, snapshot: persisted }).getSnapshot();
  Object.freeze(restored._nodes);
  Object.freeze(restored.children);
  Object.freeze(restored.historyValue);
  const initial = Object.freeze({ ...restored });
  const machine = Object.create(loopMachine, {
    restoreSnapshot: {
      value: (start: RunStart): LoopSnapshot => ({ ...initial, context: start.context }),
    },
  }) as LoopMachine;
  return { initial, machine };
}

/** The setup of the loop whose resolved config is `config`, worked out once. */
export function loopSetupOf(config: ResolvedConfig): LoopSetup {
  let setup = setups.get(config);
  if (setup === undefined) setups.set(config, (setup = createSetup(config)));
  return setup;
}
