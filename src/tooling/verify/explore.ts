/**
 * Breadth-first exploration of a loop's abstract state space: each abstract state (see `state-key.ts`) is
 * expanded once, through `machine.transition` with one reused actor scope, under every abstract outcome of
 * the effect it waits for. Edges are kept in flat arrays (millions fit), with what each one spends; the
 * transition definitions fired are collected for coverage.
 */
import { initialTransition } from 'xstate';
import { loopMachine, type LoopMachine } from '../../../machines/loop-machine.js';
import type { LoopSnapshot } from '../../../machines/pending-effect.js';
import type { LoopContext } from '../../../machines/types.js';
import { isCostBudgetExhausted, isInputBudgetExhausted, isOutputBudgetExhausted } from '../../../guards/budget.js';
import {
  abstractOutcomes,
  decisionClasses,
  toolSymmetries,
  type AbstractOutcome,
  type OutcomeOptions,
} from './abstract-outcomes.js';
import { keyOptionsFor, keyReductions, REDUCTION, stateKey, toolCallsCanBind, type KeyedState } from './state-key.js';
import { createTransitionTracer, listTransitionDefinitions, type TransitionEntry } from './transition-catalog.js';
import { compileMachine } from './compiled-step.js';
import type { VerifyModel } from './verify-model.js';

/** A space larger than this is not explored exactly; `--scale` explores it with smaller limits. */
export const DEFAULT_STATE_BOUND = 150_000;

export class StateSpaceTooLargeError extends Error {
  override name = 'StateSpaceTooLargeError';
  constructor(readonly bound: number) {
    super(
      `the exact state space has more than ${bound.toLocaleString('en-US')} abstract states; run with --scale to explore it with limits scaled down`,
    );
  }
}

/** A spending edge whose source had a budget already spent: a second call crossed it. */
export interface EdgeFinding {
  edge: number;
  detail: string;
}

export interface ExploredGraph {
  model: VerifyModel;
  /** The statechart explored, to replay paths through it. */
  machine: LoopMachine;
  keys: string[];
  snapshots: LoopSnapshot[];
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

class GrowableInt32 {
  data = new Int32Array(1 << 16);
  length = 0;
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

const INTERRUPTIONS = new Set<string>(['run.cancelRequested', 'run.faulted', 'run.deadlineReached']);

function spends(outcome: AbstractOutcome): boolean {
  const { event } = outcome;
  if (event.type === 'model.responded' || event.type === 'model.failed') return true;
  return event.type === 'evaluation.completed' && event.modelCalls > 0;
}

/** Outcomes of a state, regenerated on demand (they depend on the snapshot alone). */
export function outcomesOf(
  graph: Pick<ExploredGraph, 'model' | 'outcomeOptions'>,
  snapshot: LoopSnapshot,
): AbstractOutcome[] {
  return abstractOutcomes(snapshot, graph.model, graph.outcomeOptions);
}

const count = (value: number) => value.toLocaleString('en-US');

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
  const index = new Map<string, number>();
  const keys: string[] = [];
  const snapshots: LoopSnapshot[] = [];
  const parents = new GrowableInt32();
  const [source, target, outcomeOf, modelCalls, toolCalls] = [
    new GrowableInt32(),
    new GrowableInt32(),
    new GrowableInt32(),
    new GrowableInt32(),
    new GrowableInt32(),
  ];
  const budgetFindings: EdgeFinding[] = [];
  const destructiveFindings: EdgeFinding[] = [];
  const tally = new Array<number>(Object.keys(REDUCTION).length).fill(0);
  let memoised = 0;
  /** The compiled step's leaf of each state, beside its snapshot. */
  const leaves: number[] = [];
  // A state is keyed before it is made a snapshot: most successors are states seen already.
  const add = (state: KeyedState, parent: number, snapshotOf: () => LoopSnapshot, leaf: number): number => {
    const key = stateKey(state, keyOptions);
    const known = index.get(key);
    if (known !== undefined) return known;
    if (keys.length >= bound) throw new StateSpaceTooLargeError(bound);
    const snapshot = snapshotOf();
    leaves.push(leaf);
    const reduced = keyReductions(state, keyOptions);
    for (let bit = 0; bit < tally.length; bit += 1)
      if ((reduced & (1 << bit)) !== 0) tally[bit] = (tally[bit] as number) + 1;
    index.set(key, keys.length);
    keys.push(key);
    snapshots.push(snapshot);
    parents.push(parent);
    return keys.length - 1;
  };
  // Memoised successors of the interruptions: in the shipped machine each is one unguarded transition of the state
  // node into TERMINATED with a fixed stop reason (the final state's whole key), and the model calls it records come
  // from the event alone, so from one node the same outcome always has the same successor, transitions and spend.
  const interruptionSuccessors = new Map<string, { next: number; modelCalls: number; toolCalls: number }>();
  add(initial, -1, () => initial, compiled === null ? -1 : compiled.leafOf(initial));
  for (let head = 0; head < snapshots.length; head += 1) {
    const snapshot = snapshots[head] as LoopSnapshot;
    const outcomes = abstractOutcomes(snapshot, model, outcomeOptions);
    const spent = spentBudget(snapshot.context);
    const node = !reduce ? '' : compiled === null ? JSON.stringify(snapshot.value) : String(leaves[head]);
    for (let position = 0; position < outcomes.length; position += 1) {
      const outcome = outcomes[position] as AbstractOutcome;
      const edge = source.length;
      const memoKey = reduce && INTERRUPTIONS.has(outcome.event.type) ? `${node}|${outcome.label}` : null;
      let successor = memoKey === null ? undefined : interruptionSuccessors.get(memoKey);
      if (successor !== undefined) memoised += 1;
      else {
        let next: number;
        let nextContext: LoopContext;
        if (compiled === null) {
          const step = tracer.step(snapshot, outcome.event);
          for (const definition of step.fired) fired.add(idOf.get(definition) ?? 'unknown');
          next = add(step.next, edge, () => step.next, -1);
          nextContext = step.next.context;
        } else {
          const step = compiled.step(leaves[head] as number, snapshot.context, outcome.event);
          for (const definition of step.fired) fired.add(idOf.get(definition) ?? 'unknown');
          next = add(step.next, edge, () => compiled.snapshotOf(step.next), step.next.leaf);
          nextContext = step.next.context;
        }
        successor = {
          next,
          modelCalls: nextContext.usage.modelCalls - snapshot.context.usage.modelCalls,
          toolCalls: nextContext.usage.toolCalls - snapshot.context.usage.toolCalls,
        };
        if (memoKey !== null) interruptionSuccessors.set(memoKey, successor);
      }
      const next = successor.next;
      source.push(head);
      target.push(next);
      outcomeOf.push(position);
      modelCalls.push(successor.modelCalls);
      toolCalls.push(successor.toolCalls);
      if (spent !== null && spends(outcome))
        budgetFindings.push({ edge, detail: `${outcome.label} was paid after ${spent} was already spent` });
      if (outcome.destructiveTool !== undefined && snapshots[next]?.matches({ RUNNING: 'acting' }) === true) {
        destructiveFindings.push({
          edge,
          detail: `the destructive tool "${outcome.destructiveTool}" runs without a person's approval`,
        });
      }
    }
  }
  return {
    model,
    machine,
    keys,
    snapshots,
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
    reductions: reduce ? describeReductions(model, tally, memoised) : [],
    elapsedMs: now() - started,
  };
}
