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
 */
import { matchesState, type AnyStateNode, type AnyTransitionDefinition, type StateValue } from 'xstate';
import { loopMachine, type LoopMachine } from '../../../machines/loop-machine.js';
import type { LoopSnapshot } from '../../../machines/pending-effect.js';
import { failTask, stopRun, stopWithTaskFailure } from '../../../actions/control.js';
import { failureUsage, replyUsage } from '../../../actions/record.js';
import { isDeadlineExceeded } from '../../../guards/budget.js';
import { canContinueAfterTaskFailure } from '../../../guards/decision.js';
import { isFatalModelFailure } from '../../../guards/retry.js';
import { lastRecorded, plainGuardOf, RECORDED, recordedArgs } from '../../../machines/recorded-context.js';
import type { LoopContext, LoopEvent } from '../../../machines/types.js';
import { createContextMerge, type ContextMerge } from './context-merge.js';
import type { CompiledMachine, StepResult } from './compiled-machine.js';

type Action = AnyTransitionDefinition['actions'][number];
type Assignment = (args: Record<string, unknown>, params: unknown) => Partial<LoopContext>;
interface GuardArgs {
  context: LoopContext;
  event: LoopEvent;
}

interface Leaf {
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
interface Candidate {
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

type CompiledGuard = (args: GuardArgs, leaf: Leaf) => boolean;
type PlainGuard = (args: GuardArgs) => boolean;

interface CompiledAction {
  assignment: Assignment;
  params: unknown;
  /** Params computed from the context and event (XState's dynamic params), else null. */
  paramsOf: ((args: GuardArgs) => unknown) | null;
}

/** What taking one transition from one leaf does: the actions in XState's order, and where it lands. */
interface Taken {
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
interface TaskFailureStop {
  reason: string;
  /** The transition's actions without `failTask`, and `failTask` alone. */
  beforeFail: CompiledAction[];
  fail: CompiledAction[];
  canContinue: PlainGuard;
  /** The number of the unguarded transition to the final state, and the final leaf. */
  stopNumber: number;
  stopLeaf: number;
}

class Unsupported extends Error {}

const isDescendant = (node: AnyStateNode, ancestor: AnyStateNode): boolean => {
  for (let parent = node.parent; parent !== undefined; parent = parent.parent) if (parent === ancestor) return true;
  return false;
};

function valueOf(node: AnyStateNode): StateValue {
  let value: StateValue = node.key;
  for (let parent = node.parent; parent?.parent !== undefined; parent = parent.parent)
    value = { [parent.key]: value } as StateValue;
  return value;
}

function checkNode(node: AnyStateNode): void {
  if (node.type === 'parallel' || node.type === 'history') throw new Unsupported(`${node.type} state ${node.id}`);
  if (node.type === 'final' && node.parent?.parent !== undefined)
    throw new Unsupported(`nested final state ${node.id}`);
  if ((node.invoke?.length ?? 0) > 0 || node.after.length > 0) throw new Unsupported(`invoke or after in ${node.id}`);
  for (const key of node.transitions.keys()) if (key.includes('*')) throw new Unsupported(`descriptor ${key}`);
  for (const definition of [...[...node.transitions.values()].flat(), ...(node.always ?? [])]) {
    if (definition.target === undefined || definition.target.length !== 1)
      throw new Unsupported(`a transition of ${node.id} without exactly one target`);
    const target = definition.target[0] as AnyStateNode;
    if (target === definition.source || isDescendant(target, definition.source))
      throw new Unsupported(`an internal transition of ${node.id}`);
  }
  for (const child of Object.values(node.states)) checkNode(child);
}

/** The compiled macrostep of `machine`, or null when it uses what this table does not cover (see the module comment). */
export function compileMachine(machine: LoopMachine): CompiledMachine | null {
  try {
    return compile(machine);
  } catch (error) {
    if (error instanceof Unsupported) return null;
    throw error;
  }
}

function compile(machine: LoopMachine): CompiledMachine {
  const root = machine.root;
  checkNode(root);
  const implementations = machine.implementations as {
    guards: Record<string, unknown>;
    actions: Record<string, unknown>;
  };
  const leaves: Leaf[] = [];
  const leafIndex = new Map<AnyStateNode, number>();
  const collect = (node: AnyStateNode) => {
    const children = Object.values(node.states);
    if (children.length === 0 && node !== root) {
      const chain: AnyStateNode[] = [];
      for (let current: AnyStateNode | undefined = node; current !== undefined; current = current.parent)
        chain.push(current);
      const value = valueOf(node);
      leafIndex.set(node, leaves.length);
      leaves.push({
        node,
        chain,
        value,
        valueKey: JSON.stringify(value),
        final: node.type === 'final',
        matches: (test) => leafMatches(test, value),
        on: new Map(),
        always: [],
        finalExits: [],
      });
    }
    for (const child of children) collect(child);
  };
  collect(root);
  // Every named action must be an `assign`: anything else would run outside the context, which a transition table cannot.
  const assignments = new Map<string, Assignment>();
  for (const [name, action] of Object.entries(implementations.actions)) {
    const assign = action as { type?: unknown; assignment?: unknown };
    if (typeof action !== 'function' || assign.type !== 'xstate.assign' || typeof assign.assignment !== 'function')
      throw new Unsupported(`action ${name} is not an assign with a function`);
    assignments.set(name, assign.assignment as Assignment);
  }
  const compileAction = (action: Action): CompiledAction => {
    const named = action as string | { type: string; params?: unknown };
    const name = typeof named === 'string' ? named : typeof named === 'object' ? named.type : null;
    const assignment = name === null ? undefined : assignments.get(name);
    if (assignment === undefined) throw new Unsupported(`an action that is not a named assign`);
    const params = typeof named === 'string' || !('params' in named) ? undefined : named.params;
    return typeof params === 'function'
      ? { assignment, params: undefined, paramsOf: params as (args: GuardArgs) => unknown }
      : { assignment, params, paramsOf: null };
  };
  const compileActions = (actions: readonly Action[]) => actions.map(compileAction);
  const walk = (node: AnyStateNode) => {
    compileActions(node.entry);
    compileActions(node.exit);
    if (node.type === 'compound') compileActions(node.initial.actions);
    for (const definition of [...[...node.transitions.values()].flat(), ...(node.always ?? [])])
      compileActions(definition.actions);
    for (const child of Object.values(node.states)) walk(child);
  };
  walk(root);

  /**
   * The reason of a run stopped by `actions` into the final leaf `landed`: when the last action is the loop's own
   * `stopRun` (its assignment is `actions/control.ts`' function, not one a test provided) with static params naming a
   * reason, and no exit action runs on entering the final state (nothing could write the stop record after it).
   */
  const fixedStopReason = (actions: readonly Action[], landed: number): string | null => {
    if ((leaves[landed] as Leaf).chain.some((node) => node.exit.length > 0)) return null;
    const last = actions[actions.length - 1] as string | { type: string; params?: unknown } | undefined;
    if (typeof last !== 'object' || last === null || (assignments.get(last.type) as unknown) !== stopRun) return null;
    const params = last.params as { reason?: unknown } | undefined;
    if (typeof params !== 'object' || params === null || typeof params.reason !== 'string') return null;
    return params.reason;
  };

  /** The reason of the loop's own `failTask` with static params naming one, when it is the last of `actions`. */
  const fixedFailReason = (actions: readonly Action[]): string | null => {
    const last = actions[actions.length - 1] as string | { type: string; params?: unknown } | undefined;
    if (typeof last !== 'object' || last === null || (assignments.get(last.type) as unknown) !== failTask) return null;
    const params = last.params as { reason?: unknown } | undefined;
    if (typeof params !== 'object' || params === null || typeof params.reason !== 'string') return null;
    return params.reason;
  };

  /** XState's exit set, transition content and entry set of an external transition, for one source leaf. */
  const take = (from: number, definition: AnyTransitionDefinition): Taken => {
    const source = definition.source;
    const target = (definition.target as AnyStateNode[])[0] as AnyStateNode;
    // The domain: the nearest compound proper ancestor of the source that holds the target (the root at worst).
    let domain: AnyStateNode = root;
    for (let parent = source.parent; parent !== undefined; parent = parent.parent)
      if (isDescendant(target, parent)) {
        domain = parent;
        break;
      }
    const leaf = leaves[from] as Leaf;
    const actions: Action[] = [];
    // Exited, deepest first; then the transition's own actions.
    for (const node of leaf.chain) {
      if (node === domain) break;
      actions.push(...node.exit);
    }
    actions.push(...definition.actions);
    // Entered, outermost first: the target's ancestors below the domain, the target, then its initial descendants.
    const entered: AnyStateNode[] = [];
    for (let node: AnyStateNode | undefined = target; node !== undefined && node !== domain; node = node.parent)
      entered.unshift(node);
    let deepest = target;
    while (deepest.type === 'compound') {
      const initial = deepest.initial.target[0] as AnyStateNode;
      entered.push(initial);
      deepest = initial;
    }
    // The target and the states below it are entered by default: a compound one's initial transition runs too.
    const byDefault = entered.indexOf(target);
    entered.forEach((node, position) => {
      actions.push(...node.entry);
      if (position >= byDefault && node.type === 'compound') actions.push(...node.initial.actions);
    });
    const landed = leafIndex.get(deepest);
    if (landed === undefined) throw new Error(`no leaf ${deepest.id}`);
    const final = (leaves[landed] as Leaf).final;
    const compiled = compileActions(actions);
    const stopReason = final ? fixedStopReason(actions, landed) : null;
    const beforeStop = compiled.slice(0, -1);
    const [recording, ...more] = beforeStop;
    return {
      actions: compiled,
      leaf: landed,
      final,
      stopReason,
      beforeStop,
      replyStop:
        stopReason !== null &&
        recording !== undefined &&
        more.length === 0 &&
        recording.paramsOf === null &&
        recording.assignment === LOOP_RECORDS_REPLY,
      failStop: null,
      failReason: final ? null : fixedFailReason(actions),
      failureStops: null,
    };
  };

  /** A guard as XState evaluates it (`evaluateGuard`), its implementation and static params looked up once. */
  const compileGuard = (guard: unknown): CompiledGuard => {
    const inline = typeof guard === 'function';
    const named = guard as string | { type: string; params?: unknown };
    const resolved = inline ? guard : implementations.guards[typeof named === 'string' ? named : named.type];
    if (resolved === undefined)
      return () => {
        throw new Error(`Guard '${String(named)}' is not implemented.`);
      };
    if (typeof resolved !== 'function') return compileGuard(resolved);
    if ('check' in resolved) {
      // XState's own combinators (and, or, not, stateIn) read the machine and the active state of the snapshot.
      const check = (resolved as { check: (...args: unknown[]) => boolean }).check;
      return (args, leaf) =>
        check(
          { machine, context: args.context, value: leaf.value, _nodes: leaf.chain, matches: leaf.matches },
          args,
          resolved,
        );
    }
    const implementation = resolved as (args: GuardArgs, params: unknown) => boolean;
    const params = inline || typeof named === 'string' || !('params' in named) ? undefined : named.params;
    if (typeof params === 'function') {
      const paramsOf = params as (args: GuardArgs) => unknown;
      return (args) => implementation(args, paramsOf(args));
    }
    return (args) => implementation(args, params);
  };

  const definitions: AnyTransitionDefinition[] = [];
  const numbers = new Map<AnyTransitionDefinition, number>();
  const numberOf = (definition: AnyTransitionDefinition) => {
    let number = numbers.get(definition);
    if (number === undefined) {
      number = definitions.length;
      definitions.push(definition);
      numbers.set(definition, number);
    }
    return number;
  };
  const guards = new Map<unknown, CompiledGuard>();
  /** A named guard with static params of `undefined` or `RECORDED` that is a `readingRecorded` wrapper: its guard. */
  const plainOf = (guard: unknown): { plain: PlainGuard; readsRecorded: boolean } | null => {
    if (typeof guard !== 'string' && (typeof guard !== 'object' || guard === null)) return null;
    const named = guard as string | { type: string; params?: unknown };
    const params = typeof named === 'string' ? undefined : named.params;
    if (params !== undefined && params !== RECORDED) return null;
    const plain = plainGuardOf(implementations.guards[typeof named === 'string' ? named : named.type]);
    if (plain === undefined) return null;
    return { plain, readsRecorded: params === RECORDED && !readsRecordedDeadline(plain) };
  };
  const candidate = (from: number, definition: AnyTransitionDefinition): Candidate => {
    let guard: CompiledGuard | null = null;
    if (definition.guard !== undefined) {
      guard = guards.get(definition.guard) ?? compileGuard(definition.guard);
      guards.set(definition.guard, guard);
    }
    const unwrapped = definition.guard === undefined ? null : plainOf(definition.guard);
    return {
      number: numberOf(definition),
      guard,
      plain: unwrapped?.plain ?? null,
      readsRecorded: unwrapped?.readsRecorded ?? false,
      taken: take(from, definition),
    };
  };
  leaves.forEach((leaf, from) => {
    for (const node of leaf.chain) {
      for (const [type, candidates] of node.transitions) {
        const list = leaf.on.get(type) ?? [];
        for (const definition of candidates) list.push(candidate(from, definition));
        leaf.on.set(type, list);
      }
      for (const definition of node.always ?? []) leaf.always.push(candidate(from, definition));
    }
    leaf.finalExits = compileActions(leaf.chain.flatMap((node) => node.exit));
  });
  // The task-failure stops, once every leaf's candidates are known (see `TaskFailureStop`).
  const failStopInto = (landed: number, reason: string, taken: Taken): TaskFailureStop | null => {
    const [first, second, ...more] = (leaves[landed] as Leaf).always;
    if (first === undefined || second === undefined || more.length > 0) return null;
    if (first.plain !== canContinueAfterTaskFailure || first.readsRecorded) return null;
    const stop = second.taken;
    if (second.guard !== null || !stop.final || stop.actions.length !== 1) return null;
    const [only] = stop.actions as [CompiledAction];
    if (only.assignment !== (stopWithTaskFailure as unknown) || only.paramsOf !== null) return null;
    if ((leaves[stop.leaf] as Leaf).finalExits.length > 0) return null;
    return {
      reason,
      beforeFail: taken.actions.slice(0, -1),
      fail: taken.actions.slice(-1),
      canContinue: first.plain,
      stopNumber: second.number,
      stopLeaf: stop.leaf,
    };
  };
  // The stops a failed call meets first, once every leaf's candidates are known (see `Taken.failureStops`).
  const failureStopsInto = (taken: Taken): Candidate[] | null => {
    const [only, ...more] = taken.actions;
    if (taken.final || only === undefined || more.length > 0) return null;
    if (only.paramsOf !== null || only.assignment !== LOOP_RECORDS_FAILURE) return null;
    const stops: Candidate[] = [];
    for (const next of (leaves[taken.leaf] as Leaf).always) {
      if (next.plain === null || next.readsRecorded || !answersBeforeFailure(next.plain)) break;
      if (next.taken.stopReason === null || next.taken.beforeStop.length > 0) break;
      stops.push(next);
    }
    return stops.length > 0 ? stops : null;
  };
  for (const leaf of leaves)
    for (const candidate of [...[...leaf.on.values()].flat(), ...leaf.always]) {
      const taken = candidate.taken;
      if (taken.failReason !== null) taken.failStop = failStopInto(taken.leaf, taken.failReason, taken);
      taken.failureStops = failureStopsInto(taken);
    }

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

const loopActions = loopMachine.implementations.actions as Record<string, { assignment?: unknown }>;
/** The assignment of the loop machine's own `recordModelResponse` action (a statechart may provide its own). */
const LOOP_RECORDS_REPLY = loopActions.recordModelResponse?.assignment;
/** The assignment of the loop machine's own `recordModelFailure` action. */
const LOOP_RECORDS_FAILURE = loopActions.recordModelFailure?.assignment;

/**
 * Whether `plain` answers the same before the loop's own `recordModelFailure` as after it: `isFatalModelFailure` reads
 * the event alone, and `isDeadlineExceeded` reads `startedAt`, `limits` and `max(event.at, lastEventAt)`, of which the
 * recording changes only `lastEventAt`, to `max(lastEventAt, event.at)` (see `readsRecordedDeadline`).
 */
function answersBeforeFailure(plain: PlainGuard): boolean {
  return plain === isDeadlineExceeded || plain === isFatalModelFailure;
}

/**
 * Whether `plain` is the loop's own `isDeadlineExceeded`, which answers the same on the context as the event will
 * leave it (`RECORDED`) as on the context before: it reads `startedAt`, `limits.deadlineMs` and the event's time,
 * `max(event.at, lastEventAt)`; the two events recorded for guards (a reply, a tool round) leave `startedAt` and
 * `limits` as they are and set `lastEventAt` to `max(lastEventAt, event.at)`, which leaves that maximum as it was.
 * Asked first of every reply, it would otherwise record every reply, those that stop without reading the recording
 * too. Checked for every state and outcome of the example loops in compiled-step.test.ts.
 */
function readsRecordedDeadline(plain: PlainGuard): boolean {
  return plain === isDeadlineExceeded;
}

/**
 * `matchesState(test, value)` without its parsing: a test that is a state name with no `.` or `\\` (as
 * `getPendingEffect`'s are) is that name, so it is compared as it is; any other test goes to XState's own.
 * Each resting state asks this several times, in every exploration.
 */
export function leafMatches(test: StateValue, value: StateValue): boolean {
  if (typeof test === 'string') {
    if (test.includes('.') || test.includes('\\')) return matchesState(test, value);
    return typeof value === 'string' ? value === test : test in value;
  }
  // A snapshot given as the test reads as its value: XState's own says so.
  if (test === null || typeof test !== 'object' || 'machine' in test) return matchesState(test, value);
  if (typeof value === 'string') return false;
  for (const key of Object.keys(test))
    if (!(key in value) || !leafMatches(test[key] as StateValue, value[key] as StateValue)) return false;
  return true;
}

function noSpawn(): never {
  throw new Error('verify explores the loop machine without spawning actors');
}
