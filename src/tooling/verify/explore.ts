/**
 * Breadth-first exploration of a loop's abstract state space: each abstract state (see `state-key.ts`) is
 * expanded once, under every abstract outcome of the effect it waits for, through the machine's compiled
 * macrostep (`compiled-step.ts`) or XState's `machine.transition`. Successors are looked up by the parts of
 * their key (`key-table.ts`), whose encoding names the joined key exactly: a key is joined only when `keys` is read.
 * A new state is kept as the compiled step left it (an XState snapshot is made of it only when a path through it is
 * replayed). Edges are kept in flat arrays (millions fit), with what each one spends; the transition definitions
 * fired are collected for coverage.
 */
import { initialTransition, type StateValue } from 'xstate';
import { loopMachine, type LoopMachine } from '../../../machines/loop-machine.js';
import type { LoopSnapshot } from '../../../machines/pending-effect.js';
import type { LoopContext, LoopEvent } from '../../../machines/types.js';
import { isCostBudgetExhausted, isInputBudgetExhausted, isOutputBudgetExhausted } from '../../../guards/budget.js';
import { abstractOutcomes, type AbstractOutcome, type OutcomeOptions } from './abstract-outcomes.js';
import { decisionClasses, toolSymmetries } from './decision-classes.js';
import {
  finalKeyReason,
  keyedState,
  keyOptionsFor,
  reductionsOf,
  REDUCTION,
  toolCallsCanBind,
  writeKeyParts,
  type KeyedState,
} from './state-key.js';
import { createTransitionTracer, listTransitionDefinitions, type TransitionEntry } from './transition-catalog.js';
import type { SteppedState } from './compiled-machine.js';
import { compileMachine } from './compiled-step.js';
import { KeyTable } from './key-table.js';
import type { VerifyModel } from './verify-model.js';
import { groupDigits } from './group-digits.js';

/** A space larger than this is not explored exactly; `--scale` explores it with smaller limits. */
export const DEFAULT_STATE_BOUND = 150_000;

export class StateSpaceTooLargeError extends Error {
  override name = 'StateSpaceTooLargeError';
  constructor(readonly bound: number) {
    super(
      `the exact state space has more than ${groupDigits(bound)} abstract states; run with --scale to explore it with limits scaled down`,
    );
  }
}

/** A spending edge whose source had a budget already spent: a second call crossed it. */
export interface EdgeFinding {
  edge: number;
  detail: string;
}

/** A state of the graph: an XState snapshot, or a state the compiled step reached, which reads the same. */
export interface ExploredState {
  value: LoopSnapshot['value'];
  status: LoopSnapshot['status'];
  context: LoopContext;
  output: LoopSnapshot['output'];
  matches(value: StateValue): boolean;
}

/** How far an exploration has got, for a progress line. */
export interface ExploreProgress {
  states: number;
  /** States whose every outcome has been followed. */
  expanded: number;
  transitions: number;
  elapsedMs: number;
}

export interface ExploreOptions {
  /** Called every few thousand states expanded (the callee decides how often to show it). */
  onProgress?: (progress: ExploreProgress) => void;
}

export interface ExploredGraph {
  model: VerifyModel;
  /** The statechart explored, to replay paths through it. */
  machine: LoopMachine;
  /** Each state's key (see state-key.ts), joined when first read. */
  readonly keys: string[];
  states: ExploredState[];
  /** The XState snapshot of a state (made on demand: the exploration keeps states as the compiled step left them). */
  snapshotOf(state: number): LoopSnapshot;
  /**
   * The state `event` leads to from `state` (one of these states, or one this returned), as the exploration steps:
   * through the compiled macrostep when it explored with it (already warm, and equal to XState's, see
   * compiled-step.ts), else through XState's `machine.transition`. For replaying a path of edges.
   */
  successorOf(state: ExploredState, event: LoopEvent): ExploredState;
  /** Edge index that first reached each state (a shortest path tree); -1 for the initial state. */
  parentEdge: Int32Array;
  edgeSource: Int32Array;
  edgeTarget: Int32Array;
  edgeOutcome: Int32Array;
  edgeModelCalls: Int32Array;
  edgeToolCalls: Int32Array;
  edgeCount: number;
  transitions: TransitionEntry[];
  fired: Set<string>;
  budgetFindings: EdgeFinding[];
  destructiveFindings: EdgeFinding[];
  outcomeOptions: OutcomeOptions;
  /** Each reduction that merged states or left out outcomes, in words, with how often it applied. */
  reductions: string[];
  elapsedMs: number;
}

/**
 * Room for the edges of most explorations (the triage loop has 180k, the examples up to 295k) and their states from
 * the start: the first growth of an array runs code the exploration's optimised loop has never seen, and sends it
 * back to the interpreter (`--trace-deopt`) until it is compiled again, in the middle of a cold run. Untouched pages of
 * a zeroed typed array cost no memory, so the room costs a small exploration nothing it uses.
 */
const EDGE_ROOM = 1 << 19;
const STATE_ROOM = 1 << 15;

class GrowableInt32 {
  data = new Int32Array(0);
  length = 0;
  constructor(room: number) {
    // Assigned a second time here on purpose: V8 compiles a field stored once as a constant, and the first growth
    // would then deoptimise every function that read it (the exploration's loop among them), in a cold run.
    this.data = new Int32Array(room);
  }
  push(value: number): void {
    if (this.length === this.data.length) {
      const next = new Int32Array(this.data.length * 2);
      next.set(this.data);
      this.data = next;
    }
    this.data[this.length++] = value;
  }
  view(): Int32Array {
    return this.data.subarray(0, this.length);
  }
}

function spentBudget(context: LoopContext): string | null {
  const args = { context };
  if (isInputBudgetExhausted(args)) return 'maxInputTokens';
  if (isOutputBudgetExhausted(args)) return 'maxOutputTokens';
  if (isCostBudgetExhausted(args)) return 'maxCostUsd';
  return null;
}

/** The interruptions' event types. Asked of every outcome, so by comparison (a set lookup by a string costs more). */
const isInterruption = (type: LoopEvent['type']): boolean =>
  type === 'run.cancelRequested' || type === 'run.faulted' || type === 'run.deadlineReached';

/**
 * The outcomes whose successor is memoised per state node: the interruptions, and a tool withheld (its circuit open),
 * which in the shipped machine is the same kind of transition (one unguarded transition into TERMINATED with a fixed
 * stop reason, recording the event's time alone). The report's line counts the interruptions only, as it always has.
 */
const isMemoised = (type: LoopEvent['type']): boolean => type === 'tool.withheld' || isInterruption(type);

function spends(event: LoopEvent): boolean {
  if (event.type === 'model.responded' || event.type === 'model.failed') return true;
  return event.type === 'evaluation.completed' && event.modelCalls > 0;
}

/** Outcomes of a state, regenerated on demand (they depend on the snapshot alone). */
export function outcomesOf(
  graph: Pick<ExploredGraph, 'model' | 'outcomeOptions'>,
  snapshot: ExploredState,
): AbstractOutcome[] {
  return abstractOutcomes(snapshot, graph.model, graph.outcomeOptions);
}

const count = groupDigits;

function describeReductions(model: VerifyModel, tally: readonly number[], memoised: number): string[] {
  const states = (reduction: keyof typeof REDUCTION) => tally[Math.log2(REDUCTION[reduction])] as number;
  const { limits } = model.input;
  const lines = toolSymmetries(model);
  const budgets = [
    Number.isFinite(limits.maxInputTokens) && 'input tokens',
    Number.isFinite(limits.maxOutputTokens) && 'output tokens',
    Number.isFinite(limits.maxCostUsd) && model.price !== undefined && 'cost',
  ].filter((name) => name !== false);
  if (budgets.length > 1)
    lines.push(
      `symmetry: ${budgets.length} interchangeable spend budgets (${budgets.join(', ')}): a call crossing the first stands for the others`,
    );
  const decisions = decisionClasses(model);
  const duplicates: string[] = [];
  if (Number.isFinite(limits.deadlineMs) && decisions.length > 1)
    duplicates.push(
      `one reply after the deadline stands for all ${decisions.length} kinds of reply (the deadline is checked first)`,
    );
  if (budgets.length > 0 && decisions.some((decision) => decision.stopsBeforeSpendCheck === true))
    duplicates.push(
      'a blocked tool call is not explored again with a budget crossed (it stops the run before the spend check)',
    );
  if (duplicates.length > 0) lines.push(`interchangeable outcomes: ${duplicates.join('; ')}`);
  const keyed: Array<[keyof typeof REDUCTION, string]> = [
    [
      'stepLimitOutOfReach',
      'abstract counters: {n} states with the step limit out of reach of every decision left, keyed without their step count',
    ],
    ['spentEvaluation', 'unread details: {n} states evaluating with a budget spent, keyed by what ends the run alone'],
    [
      'lastDecisionEvaluated',
      "unread details: {n} states evaluating a task's last decision, keyed without what only later decisions read",
    ],
    ['feedbackKind', 'unread details: {n} states with feedback pending, keyed without its kind'],
    [
      'earlierTaskDigest',
      "unread details: {n} states before a task's first decision, keyed without the last task's digest",
    ],
  ];
  for (const [reduction, words] of keyed)
    if (states(reduction) > 0) lines.push(words.replace('{n}', count(states(reduction))));
  if (memoised > 0)
    lines.push(
      `memoised successors: ${count(memoised)} interruptions (cancel, fault, deadline) answered from the first of their state node`,
    );
  return lines;
}

/** How many states are expanded between two progress reports (and clock readings). */
const PROGRESS_EVERY = 2_048;

/**
 * `machine` is the loop machine unless a test gives it other guards (`loopMachine.provide(...)`) to check the checks.
 * `stepper`: each transition through the compiled macrostep (the default; XState's own for a machine it does not
 * cover) or through XState's `machine.transition`, which the tests compare it with.
 */
export function exploreLoop(
  model: VerifyModel,
  bound = DEFAULT_STATE_BOUND,
  machine: LoopMachine = loopMachine,
  stepper: 'compiled' | 'xstate' = 'compiled',
  options: ExploreOptions = {},
): ExploredGraph {
  const now = () => performance.now();
  const started = now();
  // The reductions rest on what the shipped guards and reducers read; a statechart given other ones is explored without them.
  const reduce = machine === loopMachine;
  const keyOptions = keyOptionsFor(model.input.limits, reduce);
  const outcomeOptions: OutcomeOptions = {
    toolCallsBinding: toolCallsCanBind(model.input.limits),
    decisions: decisionClasses(model),
    collapseDuplicates: reduce,
  };
  const transitions = listTransitionDefinitions(machine.root);
  const idOf = new Map(transitions.map((entry) => [entry.definition, entry.id]));
  const fired = new Set<string>();
  const tracer = createTransitionTracer(machine);
  const compiled = stepper === 'compiled' ? compileMachine(machine) : null;
  const [initial] = initialTransition(machine, model.input);
  const table = new KeyTable();
  /** Each state's entry in the key table, which its key is joined from when asked for (`keys`). */
  const keyEntries = new GrowableInt32(STATE_ROOM);
  const states: ExploredState[] = [];
  /** The compiled step's leaf of each state. */
  const leaves = new GrowableInt32(STATE_ROOM);
  const parents = new GrowableInt32(STATE_ROOM);
  const [source, target, outcomeOf, modelCalls, toolCalls] = [
    new GrowableInt32(EDGE_ROOM),
    new GrowableInt32(EDGE_ROOM),
    new GrowableInt32(EDGE_ROOM),
    new GrowableInt32(EDGE_ROOM),
    new GrowableInt32(EDGE_ROOM),
  ];
  const budgetFindings: EdgeFinding[] = [];
  const destructiveFindings: EdgeFinding[] = [];
  const tally = new Array<number>(Object.keys(REDUCTION).length).fill(0);
  let memoisedEdges = 0;

  // A state is looked up by its key's parts, as the key table encodes them; its key is joined only when asked for.
  let pendingReductions = 0;
  const find = (state: KeyedState): number => {
    const reduced = reductionsOf(state, keyOptions);
    table.begin();
    writeKeyParts(state, keyOptions, reduced, table);
    table.end();
    pendingReductions = reduced;
    return table.find();
  };
  /** Adds the state `find` just missed. */
  const addFound = (state: ExploredState, parent: number, leaf: number): number => {
    if (states.length >= bound) throw new StateSpaceTooLargeError(bound);
    const index = states.length;
    for (let bit = 0; bit < tally.length; bit += 1)
      if ((pendingReductions & (1 << bit)) !== 0) tally[bit] = (tally[bit] as number) + 1;
    keyEntries.push(table.insert(index));
    states.push(state);
    parents.push(parent);
    leaves.push(leaf);
    return index;
  };

  // What the compiled step's successors need per leaf, worked out once; one probe is keyed for every successor.
  const valueKeys: string[] = [];
  const evaluatingLeaves: boolean[] = [];
  const actingLeaves: boolean[] = [];
  const leafFacts = (leaf: number) => {
    if (compiled === null || valueKeys[leaf] !== undefined) return;
    valueKeys[leaf] = compiled.valueKeyOf(leaf);
    evaluatingLeaves[leaf] = compiled.leafMatches(leaf, { RUNNING: 'evaluating' });
    actingLeaves[leaf] = compiled.leafMatches(leaf, { RUNNING: 'acting' });
  };
  const probe: KeyedState = {
    status: 'active',
    context: initial.context,
    valueKey: '',
    evaluating: false,
    // A number from the start, as every successor gives it: the probe keeps one hidden class.
    valueId: 0,
  };
  const firedMarks = compiled === null ? null : new Uint8Array(compiled.definitions.length);
  const isActing = (state: number): boolean =>
    compiled === null
      ? (states[state] as ExploredState).matches({ RUNNING: 'acting' })
      : actingLeaves[leaves.data[state] as number] === true;

  const initialLeaf = compiled === null ? -1 : compiled.leafOf(initial);
  if (compiled !== null) leafFacts(initialLeaf);
  if (find(keyedState(initial)) < 0) addFound(initial, -1, initialLeaf);
  // Memoised successors of the interruptions (and of a tool withheld: see `isMemoised`): in the shipped machine each is one unguarded transition of the state
  // node into TERMINATED with a fixed stop reason (the final state's whole key), and the model calls it records come
  // from the event alone, so from one node the same outcome always has the same successor, transitions and spend.
  const interruptionSuccessors = new Map<
    string,
    Map<string, { next: number; modelCalls: number; toolCalls: number }>
  >();
  /** The finished states by the stop reason that keys them (see `finalKeyReason`). */
  const finalStates = new Map<string, number>();
  for (let head = 0; head < states.length; head += 1) {
    if (options.onProgress !== undefined && head % PROGRESS_EVERY === 0 && head > 0)
      options.onProgress({
        states: states.length,
        expanded: head,
        transitions: source.length,
        elapsedMs: now() - started,
      });
    const state = states[head] as ExploredState;
    const context = state.context;
    const leaf = leaves.data[head] as number;
    const outcomes = abstractOutcomes(state, model, outcomeOptions);
    const spent = spentBudget(context);
    const node = !reduce ? '' : compiled === null ? JSON.stringify(state.value) : String(leaf);
    let nodeSuccessors: Map<string, { next: number; modelCalls: number; toolCalls: number }> | undefined;
    for (let position = 0; position < outcomes.length; position += 1) {
      const outcome = outcomes[position] as AbstractOutcome;
      const edge = source.length;
      const event = outcome.event;
      const memoised = reduce && isMemoised(event.type);
      if (memoised && nodeSuccessors === undefined) {
        nodeSuccessors = interruptionSuccessors.get(node) ?? new Map();
        interruptionSuccessors.set(node, nodeSuccessors);
      }
      const memo = memoised ? nodeSuccessors?.get(outcome.label) : undefined;
      let next: number;
      let spentModelCalls: number;
      let spentToolCalls: number;
      if (memo !== undefined) {
        if (isInterruption(event.type)) memoisedEdges += 1;
        ({ next, modelCalls: spentModelCalls, toolCalls: spentToolCalls } = memo);
      } else {
        let nextUsage: LoopContext['usage'];
        if (compiled === null) {
          const step = tracer.step(state as LoopSnapshot, event);
          for (const definition of step.fired) fired.add(idOf.get(definition) ?? 'unknown');
          next = find(keyedState(step.next));
          if (next < 0) next = addFound(step.next, edge, -1);
          nextUsage = step.next.context.usage;
        } else {
          // A step into a finished state already found by its stop reason skips recording the stop (see `step`).
          const step = compiled.step(leaf, context, event, firedMarks as Uint8Array, finalStates);
          leafFacts(step.leaf);
          probe.status = step.done ? 'done' : 'active';
          probe.context = step.context;
          probe.valueKey = valueKeys[step.leaf] as string;
          probe.valueId = step.leaf;
          probe.evaluating = evaluatingLeaves[step.leaf] === true;
          // A finished run is keyed by its stop reason alone: most successors are one of a few of them.
          const reason = step.done ? (step.stoppedOn ?? finalKeyReason(step.context)) : '';
          const known = step.done ? finalStates.get(reason) : undefined;
          if (known !== undefined) next = known;
          else {
            next = find(probe);
            if (next < 0) next = addFound(compiled.stateOf(step.leaf, step.context, step.done), edge, step.leaf);
            if (step.done) finalStates.set(reason, next);
          }
          nextUsage = step.usage;
        }
        spentModelCalls = nextUsage.modelCalls - context.usage.modelCalls;
        spentToolCalls = nextUsage.toolCalls - context.usage.toolCalls;
        if (memoised)
          nodeSuccessors?.set(outcome.label, { next, modelCalls: spentModelCalls, toolCalls: spentToolCalls });
      }
      source.push(head);
      target.push(next);
      outcomeOf.push(position);
      modelCalls.push(spentModelCalls);
      toolCalls.push(spentToolCalls);
      // Asked of every edge, not only of those from a state with a budget spent: those come late in a cold run, and
      // a first call there would send the optimised loop back to the interpreter (`--trace-deopt`).
      const paid = spends(event);
      if (spent !== null && paid)
        budgetFindings.push({ edge, detail: `${outcome.label} was paid after ${spent} was already spent` });
      if (outcome.destructiveTool !== undefined && isActing(next)) {
        destructiveFindings.push({
          edge,
          detail: `the destructive tool "${outcome.destructiveTool}" runs without a person's approval`,
        });
      }
    }
  }
  if (compiled !== null)
    compiled.definitions.forEach((definition, number) => {
      if (firedMarks?.[number] === 1) fired.add(idOf.get(definition) ?? 'unknown');
    });
  const snapshots: LoopSnapshot[] = [];
  const snapshotOf = (state: number): LoopSnapshot => {
    const explored = states[state];
    if (explored === undefined) throw new Error(`no state ${state}`);
    if (compiled === null || state === 0) return explored as LoopSnapshot;
    return (snapshots[state] ??= compiled.snapshotOf(explored as SteppedState));
  };
  const replayMarks = compiled === null ? null : new Uint8Array(compiled.definitions.length);
  const successorOf = (state: ExploredState, event: LoopEvent): ExploredState => {
    if (compiled === null) return tracer.step(state as LoopSnapshot, event).next;
    const leaf = 'leaf' in state ? (state as SteppedState).leaf : compiled.leafOf(state as LoopSnapshot);
    const step = compiled.step(leaf, state.context, event, replayMarks as Uint8Array);
    return compiled.stateOf(step.leaf, step.context, step.done);
  };
  let keys: string[] | undefined;
  return {
    model,
    machine,
    get keys() {
      return (keys ??= states.map((_, state) => table.keyOf(keyEntries.data[state] as number)));
    },
    states,
    snapshotOf,
    successorOf,
    parentEdge: parents.view(),
    edgeSource: source.view(),
    edgeTarget: target.view(),
    edgeOutcome: outcomeOf.view(),
    edgeModelCalls: modelCalls.view(),
    edgeToolCalls: toolCalls.view(),
    edgeCount: source.length,
    transitions,
    fired,
    budgetFindings,
    destructiveFindings,
    outcomeOptions,
    reductions: reduce ? describeReductions(model, tally, memoisedEdges) : [],
    elapsedMs: now() - started,
  };
}
