import { describe, expect, it } from 'vitest';
import { initialTransition } from 'xstate';
import { z } from 'zod';
import incidentLoop from '../../../examples/incident.js';
import orderStatusLoop from '../../../examples/order-status.js';
import toolFeedbackConfig from '../../../examples/tool-feedback.js';
import weeklyReportLoop from '../../../examples/weekly-report.js';
import { loopMachine } from '../../../machines/loop-machine.js';
import type { LoopSnapshot } from '../../../machines/pending-effect.js';
import type {
  Feedback,
  LoopContext,
  LoopLimits,
  ProgressState,
  TaskCounters,
  TransportCounters,
  Usage,
} from '../../../machines/types.js';
import { evaluators } from '../../index.js';
import { createLoop } from '../../index.js';
import { reply, scriptedModel } from '../../testing/index.js';
import { defineTool } from '../../index.js';
import { abstractOutcomes, type AbstractOutcome } from './abstract-outcomes.js';
import { decisionClasses } from './decision-classes.js';
import { exploreLoop } from './explore.js';
import { resolveForVerify } from './resolve-for-verify.js';
import { keyOptionsFor, keyReductions, REDUCTION, stateKey } from './state-key.js';
import { createTransitionTracer, listTransitionDefinitions } from './transition-catalog.js';
import { verifyModelOf } from './verify-model.js';

// Six tasks, maxSteps 24, maxStepsPerTask 5, maxRetries 2, every spend budget finite, no judge.
const model = verifyModelOf(resolveForVerify(toolFeedbackConfig).config);
const reduced = keyOptionsFor(model.input.limits, true);
const exact = keyOptionsFor(model.input.limits, false);
const [initial] = initialTransition(loopMachine, model.input);

interface Changes {
  context?: Partial<Omit<LoopContext, 'task' | 'transport' | 'progress' | 'usage'>>;
  task?: Partial<TaskCounters>;
  transport?: Partial<TransportCounters>;
  progress?: Partial<ProgressState>;
  usage?: Partial<Usage>;
}

/** A resting snapshot of a started run, with the changes given. */
function snapshotAt(value: 'deciding' | 'evaluating', changes: Changes = {}): LoopSnapshot {
  const base = initial.context;
  const context: LoopContext = {
    ...base,
    startedAt: 1_000,
    lastEventAt: 1_100,
    nextRequestTokens: 1,
    ...changes.context,
    task: { ...base.task, ...changes.task },
    transport: { ...base.transport, ...changes.transport },
    progress: { ...base.progress, ...changes.progress },
    usage: { ...base.usage, ...changes.usage },
  };
  return loopMachine.resolveState({ value: { RUNNING: value }, context });
}

const key = (snapshot: LoopSnapshot) => stateKey(snapshot, reduced);

describe('the state key merges states that differ only in what no guard reads', () => {
  it('the step count, once the step limit is out of reach of every decision left', () => {
    // Task 5 of 6 after one decision: 4 + 5 decisions left, so steps 8 and 14 can never reach 24; 15 can.
    const at = (steps: number) =>
      snapshotAt('deciding', {
        context: { taskIndex: 4, steps },
        task: { steps: 1 },
        progress: { lastStateDigest: 'calls-0', unchangedStateStreak: 1 },
      });
    expect(key(at(8))).toBe(key(at(14)));
    expect(keyReductions(at(8), reduced) & REDUCTION.stepLimitOutOfReach).not.toBe(0);
    expect(key(at(15))).not.toBe(key(at(14)));
    expect(key(at(15))).not.toBe(key(at(16)));
    expect(stateKey(at(8), exact)).not.toBe(stateKey(at(14), exact));
  });

  it('the kind of the pending feedback, not whether there is any', () => {
    const pending = (feedback: Feedback | null) =>
      snapshotAt('deciding', {
        context: { feedback },
        task: { steps: 1 },
        progress: { lastStateDigest: 'text-0', unchangedStateStreak: 1 },
      });
    expect(key(pending({ kind: 'reflection', reason: 'too short' }))).toBe(key(pending({ kind: 'transport_retry' })));
    expect(key(pending({ kind: 'reflection', reason: 'too short' }))).not.toBe(key(pending(null)));
  });

  it("the digest the last task left, before the current task's first decision only", () => {
    const digest = (lastStateDigest: string, steps: number) =>
      snapshotAt('deciding', {
        context: { taskIndex: 2, steps: 4 + steps },
        task: { steps },
        progress: { lastStateDigest },
      });
    expect(key(digest('text-0', 0))).toBe(key(digest('calls-1', 0)));
    expect(key(digest('text-0', 1))).not.toBe(key(digest('calls-1', 1)));
  });

  it('which spend budget is spent, not whether one is', () => {
    const spent = (usage: Partial<Usage>) =>
      snapshotAt('evaluating', { context: { steps: 1 }, task: { steps: 1 }, usage });
    expect(key(spent({ inputTokens: 200_000 }))).toBe(key(spent({ outputTokens: 20_000 })));
    expect(key(spent({ outputTokens: 20_000 }))).toBe(key(spent({ costUsd: 0.05 })));
    expect(key(spent({ outputTokens: 20_000 }))).not.toBe(key(spent({ outputTokens: 19_999 })));
  });

  it('an evaluation with a budget spent keeps only what ends the run: a queued task, the step limit, the clock', () => {
    const spent = (changes: Changes) => snapshotAt('evaluating', { ...changes, usage: { costUsd: 0.05 } });
    const one = spent({
      context: { steps: 3 },
      task: { steps: 3, reflectionRetries: 1 },
      progress: { lastStateDigest: 'text-1', sameReasonStreak: 1, repeatCount: 2 },
    });
    const other = spent({
      context: { steps: 7 },
      task: { steps: 1, argumentRepairs: 1 },
      transport: { retries: 2 },
      progress: { lastStateDigest: 'text-0', nudgedAtStep: 6 },
    });
    expect(keyReductions(one, reduced)).toBe(REDUCTION.spentEvaluation);
    expect(key(one)).toBe(key(other));
    expect(key(spent({ context: { taskIndex: 5, steps: 3 } }))).not.toBe(key(one));
    expect(key(spent({ context: { steps: 24 } }))).not.toBe(key(one));
    expect(key(spent({ context: { steps: 3, lastEventAt: 61_000 } }))).not.toBe(key(one));
  });

  it("an evaluation of the task's last decision drops what only later decisions of the task read", () => {
    const last = (
      steps: number,
      changes: {
        task?: Partial<TaskCounters>;
        transport?: Partial<TransportCounters>;
        progress?: Partial<ProgressState>;
      },
      limits: Partial<LoopLimits> = {},
    ) =>
      snapshotAt('evaluating', {
        context: { steps: 6 + steps, limits: { ...initial.context.limits, ...limits } },
        task: { steps, ...changes.task },
        ...(changes.transport === undefined ? {} : { transport: changes.transport }),
        progress: { lastStateDigest: 'text-0', unchangedStateStreak: 1, ...changes.progress },
      });
    const one = last(5, {
      task: { argumentRepairs: 1 },
      progress: { repeatCount: 1, nudgedAtStep: 8, lastSignal: 'repeated_tool_call' },
    });
    const other = last(5, {
      task: { argumentRepairs: 0 },
      progress: { repeatCount: 0, duplicateObservationStreak: 1 },
    });
    expect(key(one)).toBe(key(other));
    // A reflection may still be due (canReflect), and with a decision left the repairs are read again.
    expect(key(last(5, { task: { reflectionRetries: 2 } }))).not.toBe(key(other));
    expect(key(last(4, { task: { argumentRepairs: 1 } }))).not.toBe(key(last(4, {})));
    // The run's transport retries, which a judge of the evaluation draws on, stay keyed when they are capped.
    const capped = { maxTransportRetries: 5 };
    const cappedKey = (snapshot: LoopSnapshot) =>
      stateKey(snapshot, keyOptionsFor({ ...model.input.limits, ...capped }, true));
    expect(cappedKey(last(5, { transport: { retries: 2 } }, capped))).not.toBe(cappedKey(last(5, {}, capped)));
    // Uncapped (the default), no guard reads them: they never split states.
    expect(key(last(5, { transport: { retries: 2 } }))).toBe(key(last(5, {})));
  });

  it('keeps every detail apart for a statechart given other guards, which might read them', () => {
    const pending = (feedback: Feedback) =>
      snapshotAt('deciding', { context: { feedback }, task: { steps: 1 }, progress: { lastStateDigest: 'text-0' } });
    expect(stateKey(pending({ kind: 'transport_retry' }), exact)).not.toBe(
      stateKey(pending({ kind: 'argument_repair' }), exact),
    );
    const spent = (usage: Partial<Usage>) => snapshotAt('evaluating', { task: { steps: 1 }, usage });
    expect(stateKey(spent({ inputTokens: 200_000 }), exact)).not.toBe(stateKey(spent({ costUsd: 0.05 }), exact));
    expect(keyReductions(spent({ costUsd: 0.05 }), exact)).toBe(0);
  });
});

describe('abstract outcomes that repeat another outcome are left out', () => {
  const options = { toolCallsBinding: false, decisions: decisionClasses(model) };
  const deciding = snapshotAt('deciding', {
    context: { steps: 1 },
    task: { steps: 1 },
    progress: { lastStateDigest: 'calls-0', unchangedStateStreak: 1 },
  });
  const labels = (collapseDuplicates: boolean) =>
    abstractOutcomes(deciding, model, { ...options, collapseDuplicates }).map((outcome) => outcome.label);

  it('one spend budget crossed stands for the three, one late reply for every kind of reply, a blocked call is not also heavy', () => {
    const [all, kept] = [labels(false), labels(true)];
    expect(
      all.filter((label) => /\((?:input|output|cost) budget crossed|, (?:input|output|cost) budget crossed/.test(label))
        .length,
    ).toBe(3 * 5);
    expect(kept.filter((label) => label.includes('budget crossed'))).toEqual([
      'model.responded: final reply, state changed, input budget crossed',
      'model.responded: empty reply, state changed, input budget crossed',
      'model.responded: invalid tool call, state changed, input budget crossed',
      'model.responded: tool calls (calculator, time_service, knowledge_base, knowledge_archive), state changed, input budget crossed',
    ]);
    expect(
      all.filter((label) => label.startsWith('model.responded') && label.endsWith('after the deadline')),
    ).toHaveLength(5);
    expect(kept.filter((label) => label.startsWith('model.responded') && label.endsWith('after the deadline'))).toEqual(
      ['model.responded: final reply, state changed, after the deadline'],
    );
    // Everything else stays: the light replies, the failures, the withheld tool, the interruptions.
    expect(all.filter((label) => !label.includes('budget crossed') && !label.endsWith('after the deadline'))).toEqual(
      kept.filter((label) => !label.includes('budget crossed') && !label.endsWith('after the deadline')),
    );
  });

  it('a backoff that wakes up within the deadline leaves the clock where it was: one time before the deadline', () => {
    const tracer = createTransitionTracer();
    const take = (snapshot: LoopSnapshot, label: string) => {
      const outcome = abstractOutcomes(snapshot, model, { ...options, collapseDuplicates: true }).find(
        (candidate) => candidate.label === label,
      );
      if (outcome === undefined) throw new Error(`no outcome ${label}`);
      return tracer.step(snapshot, outcome.event).next;
    };
    let snapshot = deciding;
    for (let retry = 1; retry <= 2; retry += 1) {
      snapshot = take(take(snapshot, 'model.failed: transient (503)'), 'backoff.elapsed');
      expect(snapshot.context.transport.consecutiveFailures).toBe(retry);
      expect(snapshot.context.lastEventAt).toBe(deciding.context.lastEventAt);
    }
  });
});

/**
 * The check that the reductions are sound: explore a loop exactly (the shipped machine under another name, so no
 * reduction applies), group its states by the reduced key, and require of each group what one state standing for
 * all needs: the same outcomes (those the reduced exploration keeps), each firing the same transitions with the same
 * spend into the same reduced key. And every outcome left out must do what a kept one does.
 */
function checkReductions(exported: unknown, limits: Partial<LoopLimits> = {}) {
  const { config } = resolveForVerify(exported);
  const loopModel = verifyModelOf(config, { ...config.limits, ...limits });
  const graph = exploreLoop(loopModel, 200_000, loopMachine.provide({}));
  const options = keyOptionsFor(loopModel.input.limits, true);
  const tracer = createTransitionTracer(loopMachine);
  const ids = new Map(listTransitionDefinitions(loopMachine.root).map((entry) => [entry.definition, entry.id]));
  const effect = (snapshot: LoopSnapshot, outcome: AbstractOutcome) => {
    const step = tracer.step(snapshot, outcome.event);
    const spent = `${step.next.context.usage.modelCalls - snapshot.context.usage.modelCalls} model, ${step.next.context.usage.toolCalls - snapshot.context.usage.toolCalls} tool calls`;
    const destructive = outcome.destructiveTool !== undefined && step.next.matches({ RUNNING: 'acting' });
    return `${stateKey(step.next, options)} via ${step.fired.map((definition) => ids.get(definition)).join(', ')}, ${spent}${destructive ? ', a destructive call runs' : ''}`;
  };
  const signatures = new Map<string, Set<string>>();
  const untwinned: string[] = [];
  let [dropped, reductions] = [0, 0];
  for (const snapshot of graph.states.map((_state, index) => graph.snapshotOf(index))) {
    const kept = abstractOutcomes(snapshot, loopModel, { ...graph.outcomeOptions, collapseDuplicates: true }).map(
      (outcome) => [outcome.label, effect(snapshot, outcome)],
    );
    const effects = new Set(kept.map(([, result]) => result));
    const all = abstractOutcomes(snapshot, loopModel, graph.outcomeOptions);
    dropped += all.length - kept.length;
    reductions |= keyReductions(snapshot, options);
    for (const outcome of all) if (!effects.has(effect(snapshot, outcome))) untwinned.push(outcome.label);
    const reducedKey = stateKey(snapshot, options);
    const group = signatures.get(reducedKey) ?? new Set<string>();
    group.add(
      kept
        .map(([label, result]) => `${label} → ${result}`)
        .sort()
        .join('\n'),
    );
    signatures.set(reducedKey, group);
  }
  return {
    states: graph.keys.length,
    classes: signatures.size,
    unstable: [...signatures].filter(([, group]) => group.size > 1).map(([reducedKey]) => reducedKey),
    untwinned,
    dropped,
    reductions,
  };
}

describe('the reductions are sound: the reduced key is a bisimulation of the exact state graph', () => {
  let engaged = 0;
  let checked = 0;
  const lookup = defineTool({
    name: 'lookup',
    description: 'Look a record up',
    input: z.object({}),
    access: 'read',
    execute: () => 'found',
  });
  const save = defineTool({
    name: 'save',
    description: 'Save a record',
    input: z.object({}),
    access: 'write',
    execute: () => 'saved',
  });
  const wipe = defineTool({
    name: 'wipe',
    description: 'Delete everything',
    input: z.object({}),
    access: 'destructive',
    execute: () => 'wiped',
  });
  const fetchOnce = defineTool({
    name: 'fetch_once',
    description: 'Read a queue',
    input: z.object({}),
    access: 'read',
    idempotent: false,
    execute: () => 'item',
  });
  const judge = evaluators.judge({
    model: scriptedModel([reply('{"passed": true, "reason": "ok"}')]),
    criteria: 'polite',
  });
  const tasks = [
    { id: 'first', prompt: 'first', onFailure: 'continue' as const },
    { id: 'second', prompt: 'second' },
  ];

  it.each([
    ['order-status', orderStatusLoop, {}],
    ['weekly-report', weeklyReportLoop, {}],
    ['tool-feedback at maxSteps 10, maxStepsPerTask 2', toolFeedbackConfig, { maxSteps: 10, maxStepsPerTask: 2 }],
    ['incident at maxSteps 6', incidentLoop, { maxSteps: 6 }],
    [
      'a plan, a judge, tasks that continue, reads allowed, writes denied, destructive calls approved',
      createLoop({
        model: scriptedModel([reply('x')]),
        tools: [fetchOnce, save, wipe],
        policy: { allow: ['read'], requireApproval: ['destructive'] },
        plan: true,
        tasks,
        evaluate: [evaluators.rule((text: string) => text.length > 0, 'say something'), judge],
        limits: { maxSteps: 5, maxStepsPerTask: 3, maxRetries: 1, maxToolCalls: 3 },
        noProgress: { planStall: 1, unchangedState: 2 },
      }),
      {},
    ],
    [
      'a destructive tool allowed, two read tools, a deadline',
      createLoop({
        model: scriptedModel([reply('x')]),
        tools: [lookup, fetchOnce, wipe],
        policy: { allow: ['read', 'write', 'destructive'], requireApproval: [] },
        tasks,
        limits: { maxSteps: 5, maxStepsPerTask: 3, maxRetries: 1, deadlineMs: 1_000 },
      }),
      {},
    ],
  ] as const)(
    '%s',
    (_name, exported, limits) => {
      const { states, classes, unstable, untwinned, dropped, reductions } = checkReductions(exported, limits);
      expect(unstable).toEqual([]);
      expect(untwinned).toEqual([]);
      // The check has something to check: the reductions merge states and leave outcomes out.
      expect(classes).toBeLessThan(states);
      expect(dropped).toBeGreaterThan(0);
      engaged |= reductions;
      checked += 1;
    },
    120_000,
  );

  it('between them, the loops above put every reduction of the key to the test', (context) => {
    // Only meaningful after all six (a run filtered with -t leaves some out).
    if (checked < 6) context.skip();
    expect(engaged).toBe(Object.values(REDUCTION).reduce((all, bit) => all | bit, 0));
  });
});
