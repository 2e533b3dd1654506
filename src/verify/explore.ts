/**
 * Breadth-first exploration of a loop's abstract state space: each abstract state (see `state-key.ts`) is
 * expanded once, through `machine.transition` with one reused actor scope, under every abstract outcome of
 * the effect it waits for. Edges are kept in flat arrays (millions fit), with what each one spends; the
 * transition definitions fired are collected for coverage.
 */
import { initialTransition } from 'xstate';
import { loopMachine, type LoopMachine } from '../../machines/loop-machine.js';
import type { LoopSnapshot } from '../../machines/pending-effect.js';
import type { LoopContext } from '../../machines/types.js';
import { isCostBudgetExhausted, isInputBudgetExhausted, isOutputBudgetExhausted } from '../../guards/budget.js';
import { abstractOutcomes, decisionClasses, type AbstractOutcome, type OutcomeOptions } from './abstract-outcomes.js';
import { keyOptionsFor, stateKey, toolCallsCanBind } from './state-key.js';
import { createTransitionTracer, listTransitionDefinitions, type TransitionEntry } from './transition-catalog.js';
import type { VerifyModel } from './verify-model.js';

/** A space larger than this is not explored exactly; `--scale` explores it with smaller limits. */
export const DEFAULT_STATE_BOUND = 150_000;

export class StateSpaceTooLargeError extends Error {
  override name = 'StateSpaceTooLargeError';
  constructor(readonly bound: number) {
    super(`the exact state space has more than ${bound.toLocaleString('en-US')} abstract states; run with --scale to explore it with limits scaled down`);
  }
}

/** A spending edge whose source had a budget already spent: a second call crossed it. */
export interface EdgeFinding {
  edge: number;
  detail: string;
}

export interface ExploredGraph {
  model: VerifyModel;
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

function spends(outcome: AbstractOutcome): boolean {
  const { event } = outcome;
  if (event.type === 'model.responded' || event.type === 'model.failed') return true;
  return event.type === 'evaluation.completed' && event.modelCalls > 0;
}

/** Outcomes of a state, regenerated on demand (they depend on the snapshot alone). */
export function outcomesOf(graph: Pick<ExploredGraph, 'model' | 'outcomeOptions'>, snapshot: LoopSnapshot): AbstractOutcome[] {
  return abstractOutcomes(snapshot, graph.model, graph.outcomeOptions);
}

/** `machine` is the loop machine unless a test gives it other guards (`loopMachine.provide(...)`) to check the checks. */
export function exploreLoop(model: VerifyModel, bound = DEFAULT_STATE_BOUND, machine: LoopMachine = loopMachine): ExploredGraph {
  const now = () => performance.now();
  const started = now();
  const keyOptions = keyOptionsFor(model.input.limits);
  const outcomeOptions: OutcomeOptions = { toolCallsBinding: toolCallsCanBind(model.input.limits), decisions: decisionClasses(model) };
  const transitions = listTransitionDefinitions(machine.root);
  const idOf = new Map(transitions.map((entry) => [entry.definition, entry.id]));
  const fired = new Set<string>();
  const tracer = createTransitionTracer(machine);
  const [initial] = initialTransition(machine, model.input);
  const index = new Map<string, number>();
  const keys: string[] = [];
  const snapshots: LoopSnapshot[] = [];
  const parents = new GrowableInt32();
  const [source, target, outcomeOf, modelCalls, toolCalls] = [new GrowableInt32(), new GrowableInt32(), new GrowableInt32(), new GrowableInt32(), new GrowableInt32()];
  const budgetFindings: EdgeFinding[] = [];
  const destructiveFindings: EdgeFinding[] = [];
  const add = (snapshot: LoopSnapshot, parent: number): number => {
    const key = stateKey(snapshot, keyOptions);
    const known = index.get(key);
    if (known !== undefined) return known;
    if (keys.length >= bound) throw new StateSpaceTooLargeError(bound);
    index.set(key, keys.length);
    keys.push(key);
    snapshots.push(snapshot);
    parents.push(parent);
    return keys.length - 1;
  };
  add(initial, -1);
  for (let head = 0; head < snapshots.length; head += 1) {
    const snapshot = snapshots[head] as LoopSnapshot;
    const outcomes = abstractOutcomes(snapshot, model, outcomeOptions);
    const spent = spentBudget(snapshot.context);
    for (let position = 0; position < outcomes.length; position += 1) {
      const outcome = outcomes[position] as AbstractOutcome;
      const step = tracer.step(snapshot, outcome.event);
      for (const definition of step.fired) fired.add(idOf.get(definition) ?? 'unknown');
      const edge = source.length;
      const next = add(step.next, edge);
      source.push(head);
      target.push(next);
      outcomeOf.push(position);
      modelCalls.push(step.next.context.usage.modelCalls - snapshot.context.usage.modelCalls);
      toolCalls.push(step.next.context.usage.toolCalls - snapshot.context.usage.toolCalls);
      if (spent !== null && spends(outcome)) budgetFindings.push({ edge, detail: `${outcome.label} was paid after ${spent} was already spent` });
      if (outcome.destructiveTool !== undefined && step.next.matches({ RUNNING: 'acting' })) {
        destructiveFindings.push({ edge, detail: `the destructive tool "${outcome.destructiveTool}" runs without a person's approval` });
      }
    }
  }
  return {
    model,
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
    elapsedMs: now() - started,
  };
}
