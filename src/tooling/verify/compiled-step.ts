/**
 * The loop machine's macrostep as a table, for `verify`'s exploration: XState's `machine.transition`
 * builds several snapshots, node sets and an inspection event per microstep, which is most of what an
 * exhaustive exploration of hundreds of thousands of transitions costs. This takes the same macrostep
 * off the machine's own definition (its state nodes, transition definitions, guards and `assign` reducers,
 * run as XState runs them), with the exit and entry sets of each transition worked out once.
 *
 * It covers the statecharts the loop machine is: compound states without parallel or history nodes,
 * final states only at the top, external transitions, `assign` actions only, exact event types. For any
 * other machine `compileMachine` returns null and the exploration goes through XState.
 *
 * The tables are built once per exploration (compiled-table.ts says what they hold): the leaves by compiled-leaves.ts,
 * actions and guards by compiled-actions.ts and compiled-guards.ts, each leaf's transitions by compiled-transitions.ts,
 * the stops a step may take short by compiled-stops.ts. This module is the step that runs them, the hot path: its
 * helpers are closures over the tables' locals, as they were when it was one function.
 */
import type { LoopMachine } from '../../../machines/loop-machine.js';
import type { LoopSnapshot } from '../../../machines/pending-effect.js';
import { failureUsage, replyUsage } from '../../../actions/record.js';
import { lastRecorded, recordedArgs } from '../../../machines/recorded-context.js';
import type { LoopContext, LoopEvent } from '../../../machines/types.js';
import { createActionCompiler } from './compiled-actions.js';
import { checkCovered, collectLeaves } from './compiled-leaves.js';
import type { CompiledMachine, StepResult } from './compiled-machine.js';
import {
  Unsupported,
  type Candidate,
  type CompiledAction,
  type GuardArgs,
  type Leaf,
  type PlainGuard,
} from './compiled-table.js';
import { compileTransitions } from './compiled-transitions.js';
import { createContextMerge, type ContextMerge } from './context-merge.js';

/**
 * The compiled macrostep of `machine`, or null when it uses what this table does not cover (see the module comment).
 *
 * @example
 * const compiled = compileMachine(loopMachine);
 * const step = compiled?.step(compiled.leafOf(snapshot), snapshot.context, event, new Uint8Array(compiled.definitions.length));
 */
export function compileMachine(machine: LoopMachine): CompiledMachine | null {
  try {
    return compile(machine);
  } catch (error) {
    if (error instanceof Unsupported) return null;
    throw error;
  }
}

/** The tables of `machine` (compiled-table.ts), built once, and the step that runs them. */
function compile(machine: LoopMachine): CompiledMachine {
  const root = machine.root;
  checkCovered(root);
  const found = collectLeaves(root);
  const { leaves, leafIndex } = found;
  const actions = createActionCompiler(root, (machine.implementations as { actions: Record<string, unknown> }).actions);
  const definitions = compileTransitions(machine, found, actions);

  // Made on the first step, from the first context (the machine's initial one): see context-merge.ts.
  let merge: ContextMerge | null = null;
  /**
   * The args of every assignment and guard call, one object each, refilled before each call: a step makes ~2 of each
   * kind, hundreds of thousands an exploration, and V8 keeps them on the heap (the calls are not inlined). The
   * machine's reducers and guards read them during the call and keep nothing of them.
   */
  const actionArgs = { context: undefined as never as LoopContext, event: undefined as never as LoopEvent };
  const assignArgs = {
    context: undefined as never as LoopContext,
    event: undefined as never as LoopEvent,
    spawn: noSpawn,
    self: undefined,
    system: undefined,
  };
  const guardArgs: GuardArgs = { context: undefined as never, event: undefined as never };
  const runActions = (actions: readonly CompiledAction[], context: LoopContext, event: LoopEvent): LoopContext => {
    let current = context;
    merge ??= createContextMerge(context);
    for (const action of actions) {
      let params = action.params;
      if (action.paramsOf !== null) {
        actionArgs.context = current;
        actionArgs.event = event;
        params = action.paramsOf(actionArgs);
      }
      assignArgs.context = current;
      assignArgs.event = event;
      const update = action.assignment(assignArgs, params);
      // The update its guards recorded (see recorded-context.ts) was merged already.
      const recorded = lastRecorded(current, event);
      current = recorded !== undefined && recorded.update === update ? recorded.after : merge(current, update);
    }
    return current;
  };

  const output = (context: LoopContext, leaf: Leaf): unknown => {
    const mapper: unknown = root.output;
    if (typeof mapper !== 'function') return mapper;
    const event = { type: `xstate.done.state.${leaf.node.id}`, output: undefined };
    return (mapper as (args: unknown) => unknown)({ context, event, self: undefined });
  };

  const select = (candidates: readonly Candidate[], args: GuardArgs, leaf: Leaf): Candidate | undefined => {
    // The recorded args, once for every guard of this selection that reads them: `recordedArgs` gives these very
    // args again while its recording of this event and context is the last (no other is made between the guards).
    let recorded: GuardArgs | null = null;
    for (const candidate of candidates) {
      const plain = candidate.plain;
      if (plain !== null) {
        if (plain(candidate.readsRecorded ? (recorded ??= recordedArgs(args)) : args)) return candidate;
      } else if (candidate.guard === null || candidate.guard(args, leaf)) return candidate;
    }
    return undefined;
  };

  const result: StepResult = {
    leaf: 0,
    context: undefined as never,
    usage: undefined as never,
    done: false,
    stoppedOn: null,
  };
  return {
    definitions,
    leafOf(snapshot) {
      const node = snapshot._nodes.find((candidate) => candidate.type === 'atomic' || candidate.type === 'final');
      const index = node === undefined ? undefined : leafIndex.get(node);
      if (index === undefined) throw new Error(`no leaf in ${JSON.stringify(snapshot.value)}`);
      return index;
    },
    valueKeyOf: (leaf) => (leaves[leaf] as Leaf).valueKey,
    leafMatches: (leaf, value) => (leaves[leaf] as Leaf).matches(value),
    step(from, context, event, fired, knownStops = null) {
      const start = leaves[from] as Leaf;
      let leaf = start;
      let leafNumber = from;
      let current = context;
      let done = start.final;
      let stoppedOn: string | null = null;
      let usage: LoopContext['usage'] | null = null;
      const args = guardArgs;
      args.context = context;
      args.event = event;
      // The event: the deepest state with an enabled candidate for it takes it.
      let chosen = select(start.on.get(event.type) ?? NONE, args, leaf);
      // Then eventless transitions (their guards see the same event), until none is enabled or the machine is done.
      if (chosen === undefined && !done) chosen = select(leaf.always, args, leaf);
      while (chosen !== undefined) {
        fired[chosen.number] = 1;
        const taken = chosen.taken;
        const failureStops = taken.failureStops;
        if (failureStops !== null && knownStops !== null && event.type === 'model.failed') {
          // A failed call recorded, then stopped at once (see `Taken.failureStops`): asked before it is recorded.
          args.context = current;
          let stop: Candidate | undefined;
          for (const candidate of failureStops)
            if ((candidate.plain as PlainGuard)(args)) {
              stop = candidate;
              break;
            }
          const stopReason = stop?.taken.stopReason ?? null;
          if (stop !== undefined && stopReason !== null && knownStops.has(stopReason)) {
            fired[stop.number] = 1;
            usage = failureUsage(current, event);
            stoppedOn = stopReason;
            leafNumber = stop.taken.leaf;
            done = true;
            break;
          }
        }
        const reason = taken.stopReason;
        if (reason !== null && knownStops !== null && knownStops.has(reason)) {
          // Into a final state the caller has, by a fixed reason: all but `stopRun` (see `step`); its exits run nothing.
          // A reply recorded and stopped leaves only its spend: the recording is made when a guard read it already.
          if (taken.replyStop && event.type === 'model.responded')
            usage = lastRecorded(current, event)?.after.usage ?? replyUsage(current, event);
          else current = runActions(taken.beforeStop, current, event);
          stoppedOn = reason;
        } else if (taken.failStop !== null && knownStops !== null && knownStops.has(taken.failStop.reason)) {
          // Into the task-failure state, by a fixed reason the caller has: when the task cannot continue, the run
          // stops there on that reason, without `failTask` and the stop (see `TaskFailureStop`).
          const failStop = taken.failStop;
          current = runActions(failStop.beforeFail, current, event);
          args.context = current;
          if (!failStop.canContinue(args)) {
            fired[failStop.stopNumber] = 1;
            stoppedOn = failStop.reason;
            leafNumber = failStop.stopLeaf;
            done = true;
            break;
          }
          current = runActions(failStop.fail, current, event);
        } else current = runActions(taken.actions, current, event);
        leafNumber = taken.leaf;
        leaf = leaves[leafNumber] as Leaf;
        if (taken.final) done = true;
        if (done) break;
        args.context = current;
        chosen = select(leaf.always, args, leaf);
      }
      // Entering a final state ends the run: every active state's exit actions, then (for a new state) the output.
      if (done && !start.final && stoppedOn === null) current = runActions(leaf.finalExits, current, event);
      result.leaf = leafNumber;
      result.context = current;
      result.done = done;
      result.usage = usage ?? current.usage;
      result.stoppedOn = stoppedOn;
      return result;
    },
    stateOf(leafNumber, context, done) {
      const leaf = leaves[leafNumber] as Leaf;
      return {
        leaf: leafNumber,
        value: leaf.value as LoopSnapshot['value'],
        status: done ? 'done' : 'active',
        context,
        output: done ? (output(context, leaf) as LoopSnapshot['output']) : undefined,
        matches: leaf.matches,
      };
    },
    snapshotOf(state) {
      return machine.resolveState({
        value: state.value,
        context: state.context,
        status: state.status,
        output: state.output,
        historyValue: {},
      } as never) as LoopSnapshot;
    },
  };
}

const NONE: readonly Candidate[] = [];

function noSpawn(): never {
  throw new Error('verify explores the loop machine without spawning actors');
}
