/**
 * The compiled macrostep explores exactly what XState's `machine.transition` does: the same states in the same
 * order, the same edges and spend, the same transitions fired, the same findings, on every example loop, the
 * 22-tool triage loop of the benchmark, loops with plans, judges, tasks, every tool verdict and transport caps,
 * and on a statechart given other guards. The snapshots made of its states on demand are XState's own.
 */
import { describe, expect, it } from 'vitest';
import { assign, createMachine } from 'xstate';
import { z } from 'zod';
import { createLoop, defineTool, evaluators } from 'loopstate';
import { reply, scriptedModel } from 'loopstate/testing';
import incidentLoop from '../../../examples/incident.js';
import orderStatusLoop from '../../../examples/order-status.js';
import toolFeedbackLoop from '../../../examples/tool-feedback.js';
import weeklyReportLoop from '../../../examples/weekly-report.js';
import triageLoop from '../../../bench/triage-loop.js';
import { loopMachine, type LoopMachine } from '../../../machines/loop-machine.js';
import type { LoopEvent, LoopLimits } from '../../../machines/types.js';
import { isDeadlineExceeded } from '../../../guards/budget.js';
import { lastRecorded, readingRecorded, recordedArgs } from '../../../machines/recorded-context.js';
import { compileMachine } from './compiled-step.js';
import { keyOptionsFor, stateKey } from './state-key.js';
import { exploreLoop, outcomesOf, type ExploredGraph, type ExploreProgress } from './explore.js';
import { resolveForVerify } from './resolve-for-verify.js';
import { verifyModelOf } from './verify-model.js';

function explored(loop: unknown, limits: Partial<LoopLimits>, machine: LoopMachine = loopMachine) {
  const { config } = resolveForVerify(loop);
  const model = verifyModelOf(config, { ...config.limits, ...limits });
  return (stepper: 'compiled' | 'xstate') => exploreLoop(model, 1_000_000, machine, stepper);
}

/** Everything verify reads off a graph, but its time. */
function figures(graph: ExploredGraph) {
  return {
    keys: graph.keys,
    states: graph.states.map((snapshot) => ({
      value: snapshot.value,
      status: snapshot.status,
      context: snapshot.context,
      output: snapshot.output,
    })),
    edges: [
      graph.parentEdge,
      graph.edgeSource,
      graph.edgeTarget,
      graph.edgeOutcome,
      graph.edgeModelCalls,
      graph.edgeToolCalls,
    ].map((array) => [...array]),
    fired: [...graph.fired].sort(),
    budgetFindings: graph.budgetFindings,
    destructiveFindings: graph.destructiveFindings,
    reductions: graph.reductions,
  };
}

describe('the compiled macrostep', () => {
  const cases: [string, unknown, Partial<LoopLimits>][] = [
    ['order-status', orderStatusLoop, {}],
    ['weekly-report', weeklyReportLoop, {}],
    ['tool-feedback', toolFeedbackLoop, { maxSteps: 6 }],
    ['incident', incidentLoop, { maxSteps: 8 }],
    ['triage (22 tools)', triageLoop, { maxSteps: 6 }],
  ];
  it.each(cases)(
    'explores %s exactly as XState does',
    (_name, loop, limits) => {
      const explore = explored(loop, limits);
      const compiled = explore('compiled');
      expect(compiled.keys.length).toBeGreaterThan(100);
      expect(figures(compiled)).toEqual(figures(explore('xstate')));
    },
    120_000,
  );

  const tool = (name: string, access: 'read' | 'write' | 'destructive', idempotent = access === 'read') =>
    defineTool({ name, description: name, input: z.object({}), access, idempotent, execute: () => 'done' });
  const tasks = [
    { id: 'first', prompt: 'first', onFailure: 'continue' as const },
    { id: 'second', prompt: 'second' },
  ];
  const judge = evaluators.judge({
    model: scriptedModel([reply('{"passed": true, "reason": "ok"}')]),
    criteria: 'kind',
  });
  const loops: [string, unknown][] = [
    [
      'a plan, a judge, tasks that continue, writes denied, destructive calls approved, capped transport retries',
      createLoop({
        model: scriptedModel([reply('x')]),
        tools: [tool('fetch_once', 'read', false), tool('save', 'write'), tool('wipe', 'destructive')],
        policy: { allow: ['read'], requireApproval: ['destructive'] },
        plan: true,
        tasks,
        evaluate: [evaluators.rule((text: string) => text.length > 0, 'say something'), judge],
        limits: { maxSteps: 5, maxStepsPerTask: 3, maxRetries: 1, maxToolCalls: 3, maxTransportRetries: 2 },
        noProgress: { planStall: 1, unchangedState: 2 },
      }),
    ],
    [
      'a destructive tool allowed, a deadline, spend budgets, a per-call transport cap',
      createLoop({
        model: scriptedModel([reply('x')]),
        tools: [tool('lookup', 'read'), tool('fetch_once', 'read', false), tool('wipe', 'destructive')],
        policy: { allow: ['read', 'write', 'destructive'], requireApproval: [] },
        tasks,
        prices: { scripted: { inputPerMillion: 1, outputPerMillion: 2 } },
        limits: {
          maxSteps: 5,
          maxStepsPerTask: 3,
          maxRetries: 1,
          deadlineMs: 1_000,
          maxInputTokens: 10_000,
          maxOutputTokens: 2_000,
          maxCostUsd: 1,
          maxTransportAttempts: 2,
        },
      }),
    ],
  ];
  it.each(loops)(
    'explores %s exactly as XState does',
    (_name, loop) => {
      const explore = explored(loop, {});
      const compiled = explore('compiled');
      expect(compiled.keys.length).toBeGreaterThan(100);
      expect(figures(compiled)).toEqual(figures(explore('xstate')));
    },
    120_000,
  );

  it("makes XState's own snapshots of its states on demand, once each", () => {
    const explore = explored(incidentLoop, { maxSteps: 4 });
    const compiled = explore('compiled');
    const reference = explore('xstate');
    expect(compiled.keys).toEqual(reference.keys);
    const snapshotFigures = (snapshot: ReturnType<ExploredGraph['snapshotOf']>) => ({
      value: snapshot.value,
      status: snapshot.status,
      context: snapshot.context,
      output: snapshot.output,
      children: snapshot.children,
      error: snapshot.error,
      historyValue: snapshot.historyValue,
      tags: [...snapshot.tags],
    });
    for (let state = 0; state < compiled.keys.length; state += 1) {
      const made = compiled.snapshotOf(state);
      const own = reference.snapshotOf(state);
      expect(snapshotFigures(made)).toEqual(snapshotFigures(own));
      expect(made.machine).toBe(own.machine);
      expect(compiled.snapshotOf(state)).toBe(made);
    }
  }, 120_000);

  it('reports its progress every 2,048 states expanded, with figures that only grow', () => {
    const reports: ExploreProgress[] = [];
    const { config } = resolveForVerify(toolFeedbackLoop);
    const model = verifyModelOf(config, { ...config.limits, maxSteps: 6 });
    const graph = exploreLoop(model, 1_000_000, loopMachine, 'compiled', {
      onProgress: (report) => reports.push(report),
    });
    expect(reports.length).toBe(Math.floor((graph.keys.length - 1) / 2_048));
    expect(reports.length).toBeGreaterThan(0);
    reports.forEach((report, index) => {
      expect(report.expanded).toBe((index + 1) * 2_048);
      expect(report.states).toBeGreaterThan(report.expanded);
      expect(report.states).toBeLessThanOrEqual(graph.keys.length);
      expect(report.transitions).toBeLessThanOrEqual(graph.edgeCount);
      if (index > 0) expect(report.transitions).toBeGreaterThan((reports[index - 1] as ExploreProgress).transitions);
    });
  }, 120_000);

  it('names every state by its own joined key, once, and every edge by its target as the XState stepper does', () => {
    const { config } = resolveForVerify(triageLoop);
    const model = verifyModelOf(config, { ...config.limits, maxSteps: 6 });
    const graph = exploreLoop(model, 1_000_000);
    const options = keyOptionsFor(model.input.limits, true);
    expect(new Set(graph.keys).size).toBe(graph.keys.length);
    graph.keys.forEach((key, state) => expect(stateKey(graph.snapshotOf(state), options)).toBe(key));
    // Every edge leads to the state its successor's key names, as the XState stepper (which keys by text) finds it.
    const reference = exploreLoop(model, 1_000_000, loopMachine, 'xstate');
    expect([...graph.edgeTarget].map((target) => graph.keys[target])).toEqual(
      [...reference.edgeTarget].map((target) => reference.keys[target]),
    );
  }, 120_000);

  it('explores a statechart given other guards as XState does', () => {
    const broken = loopMachine.provide({ guards: { isStepLimitReached: () => false } });
    const explore = explored(orderStatusLoop, { maxSteps: 3 }, broken);
    expect(figures(explore('compiled'))).toEqual(figures(explore('xstate')));
  }, 120_000);

  /** Every step of an exploration taken twice, with every stop reason known and without: what each gives. */
  function stepsBothWays(graph: ExploredGraph, machine: LoopMachine) {
    const compiledMachine = compileMachine(machine);
    if (compiledMachine === null) throw new Error('not compiled');
    const marks = new Uint8Array(compiledMachine.definitions.length);
    /** The transitions the step fired, by their numbers. */
    const firedBy = (step: () => unknown) => {
      marks.fill(0);
      step();
      return [...marks.keys()].filter((number) => marks[number] === 1);
    };
    const everyStop = { has: () => true };
    const steps: Array<{
      full: unknown;
      skipped: unknown;
      stoppedOn: string | null;
      fullFired: number[];
      event: LoopEvent;
      /** Whether the short-cut step recorded its event (its guards or its actions, through recorded-context.ts). */
      recorded: boolean;
      /** Whether the short-cut step's context is not the one it started from. */
      changed: boolean;
    }> = [];
    graph.states.forEach((state, index) => {
      const leaf = compiledMachine.leafOf(graph.snapshotOf(index));
      for (const { event } of outcomesOf(graph, state)) {
        // The short-cut step first: whether it recorded the event is read off the recording it leaves.
        let skipped = compiledMachine.step(leaf, state.context, event, marks, everyStop);
        const recorded = lastRecorded(state.context, event) !== undefined;
        const skippedFired = firedBy(
          () => (skipped = compiledMachine.step(leaf, state.context, event, marks, everyStop)),
        );
        const stoppedOn = skipped.stoppedOn;
        const changed = skipped.context !== state.context;
        const skippedFigures = {
          leaf: skipped.leaf,
          done: skipped.done,
          reason: stoppedOn ?? skipped.context.stop?.reason ?? null,
          usage: skipped.usage,
          fired: skippedFired,
        };
        if (stoppedOn === null) expect(skipped.usage).toBe(skipped.context.usage);
        let full = compiledMachine.step(leaf, state.context, event, marks);
        const fullFired = firedBy(() => (full = compiledMachine.step(leaf, state.context, event, marks)));
        const fullFigures = { leaf: full.leaf, done: full.done, reason: full.context.stop?.reason ?? null };
        const fullUsage = full.context.usage;
        expect(full.stoppedOn).toBeNull();
        // A step that does not stop on a known reason gives its context's usage.
        expect(full.usage).toBe(fullUsage);
        steps.push({
          fullFired,
          full: { ...fullFigures, usage: fullUsage, fired: fullFired },
          // Stopped on a reason: the reason stands for the stop record it did not write; the usage is the run's.
          skipped: skippedFigures,
          stoppedOn,
          event,
          recorded,
          changed,
        });
      }
    });
    return steps;
  }

  it('skips recording a stop the caller knows, landing where the whole step does with the same spend', () => {
    const explore = explored(incidentLoop, { maxSteps: 4 });
    const graph = explore('compiled');
    const steps = stepsBothWays(graph, loopMachine);
    for (const { full, skipped } of steps) expect(skipped).toEqual(full);
    // Most steps end a run on a fixed reason (the count shows the shortcut is taken, and where).
    const stopped = steps.filter((step) => step.stoppedOn !== null);
    expect(stopped.length).toBeGreaterThan(steps.length / 3);
    expect(new Set(stopped.map((step) => step.stoppedOn))).toEqual(
      new Set([
        'budget_exhausted',
        'cancelled',
        'completed',
        'deadline_exceeded',
        'fatal_error',
        'max_steps',
        'needs_human',
        'no_progress',
        'retries_exhausted',
        'tool_unavailable',
      ]),
    );
  }, 120_000);

  it('stops a reply on a reason it knows without recording it, when no guard read the recording', () => {
    const [, deadlineAndBudgets] = loops[1] as [string, unknown];
    for (const [loop, limits] of [
      [incidentLoop, { maxSteps: 4 }],
      [deadlineAndBudgets, {}],
    ] as const) {
      const steps = stepsBothWays(explored(loop, limits)('compiled'), loopMachine);
      for (const { full, skipped } of steps) expect(skipped).toEqual(full);
      const replies = steps.filter((step) => step.event.type === 'model.responded' && step.stoppedOn !== null);
      // The stops the decision guards and the deadline choose (asked before any guard that reads the recording).
      const unrecorded = replies.filter((step) => !step.recorded);
      expect(unrecorded.length).toBeGreaterThan(50);
      expect(new Set(unrecorded.map((step) => step.stoppedOn))).toEqual(
        new Set(
          loop === incidentLoop
            ? ['deadline_exceeded', 'needs_human', 'tool_unavailable']
            : ['deadline_exceeded', 'tool_unavailable'],
        ),
      );
      // The spend and step stops read the recording their guards made.
      const recorded = replies.filter((step) => step.recorded);
      expect(recorded.length).toBeGreaterThan(50);
      expect(recorded.map((step) => step.stoppedOn)).toContain('budget_exhausted');
      expect(recorded.map((step) => step.stoppedOn)).not.toContain('tool_unavailable');
    }
  }, 120_000);

  it("records a reply's stop when the statechart brings its own recordModelResponse", () => {
    // Its own record of a reply: one more model call than the reply says. Stopping without it would miss that call.
    const own = loopMachine.provide({
      actions: {
        recordModelResponse: assign(({ context }) => ({
          steps: context.steps + 1,
          usage: { ...context.usage, modelCalls: context.usage.modelCalls + 2 },
        })),
      },
    });
    const explore = explored(incidentLoop, { maxSteps: 4 }, own);
    const steps = stepsBothWays(explore('compiled'), own);
    const replies = steps.filter((step) => step.event.type === 'model.responded' && step.stoppedOn !== null);
    expect(replies.length).toBeGreaterThan(50);
    for (const step of replies) expect(step.changed).toBe(true);
    for (const { full, skipped } of steps) expect(skipped).toEqual(full);
    expect(figures(explore('compiled'))).toEqual(figures(explore('xstate')));
  }, 120_000);

  it('stops a failed call that ends the run at once on a reason it knows without recording it', () => {
    const [, deadlineAndBudgets] = loops[1] as [string, unknown];
    const steps = stepsBothWays(explored(deadlineAndBudgets, {})('compiled'), loopMachine);
    for (const { full, skipped } of steps) expect(skipped).toEqual(full);
    const failures = steps.filter((step) => step.event.type === 'model.failed');
    const unrecorded = failures.filter((step) => !step.changed);
    expect(unrecorded.length).toBeGreaterThan(50);
    for (const step of unrecorded) expect(step.stoppedOn).toMatch(/^(deadline_exceeded|fatal_error)$/);
    expect(new Set(unrecorded.map((step) => step.stoppedOn))).toEqual(new Set(['deadline_exceeded', 'fatal_error']));
    // A failure the run goes on from (a retry), that fails the task or whose retry would wake past the deadline (a
    // guard that reads the recorded failures) is recorded.
    const recorded = failures.filter((step) => step.changed);
    expect(recorded.length).toBeGreaterThan(50);
    for (const step of recorded) expect(step.stoppedOn).not.toBe('fatal_error');
    expect(new Set(recorded.map((step) => step.stoppedOn))).toEqual(
      new Set([null, 'deadline_exceeded', 'retries_exhausted']),
    );
  }, 120_000);

  it('records a failed call when the statechart brings its own recordModelFailure', () => {
    // Its own record of a failure: one more model call than the failure says. Stopping without it would miss that call.
    const own = loopMachine.provide({
      actions: {
        recordModelFailure: assign(({ context }) => ({
          usage: { ...context.usage, modelCalls: context.usage.modelCalls + 2 },
          transport: { ...context.transport, consecutiveFailures: context.transport.consecutiveFailures + 1 },
        })),
      },
    });
    const [, deadlineAndBudgets] = loops[1] as [string, unknown];
    const explore = explored(deadlineAndBudgets, {}, own);
    const steps = stepsBothWays(explore('compiled'), own);
    const failures = steps.filter((step) => step.event.type === 'model.failed');
    expect(failures.filter((step) => step.stoppedOn === 'fatal_error').length).toBeGreaterThan(50);
    for (const step of failures) expect(step.changed).toBe(true);
    for (const { full, skipped } of steps) expect(skipped).toEqual(full);
    expect(figures(explore('compiled'))).toEqual(figures(explore('xstate')));
    // Its own guard of a fatal failure, one that reads the failures recorded (this one included, so it never says
    // yes): asked before the recording, it would say yes to every first failure.
    const ownGuard = loopMachine.provide({
      guards: { isFatalModelFailure: readingRecorded(({ context }) => context.transport.consecutiveFailures === 0) },
    });
    const exploreOwn = explored(deadlineAndBudgets, {}, ownGuard);
    const ownSteps = stepsBothWays(exploreOwn('compiled'), ownGuard);
    for (const { full, skipped } of ownSteps) expect(skipped).toEqual(full);
    expect(ownSteps.filter((step) => step.event.type === 'model.failed').length).toBeGreaterThan(50);
    expect(figures(exploreOwn('compiled'))).toEqual(figures(exploreOwn('xstate')));
  }, 120_000);

  it("asks the loop's own deadline of the context before the event: it answers as on the recorded one", () => {
    // The compiled step asks `isDeadlineExceeded` without recording the event first (see `readsRecordedDeadline`).
    const [, deadlineAndBudgets] = loops[1] as [string, unknown];
    const graph = explored(deadlineAndBudgets, {})('compiled');
    const answers = new Set<boolean>();
    let recordedEvents = 0;
    graph.states.forEach((state) => {
      for (const { event } of outcomesOf(graph, state)) {
        const args = { context: state.context, event };
        const recorded = recordedArgs(args);
        if (recorded !== args) recordedEvents += 1;
        const answer = isDeadlineExceeded(args);
        expect(isDeadlineExceeded(recorded)).toBe(answer);
        answers.add(answer);
      }
    });
    expect(recordedEvents).toBeGreaterThan(100);
    expect(answers).toEqual(new Set([true, false]));
  }, 120_000);

  it('asks a deadline guard the statechart brings of the recorded context', () => {
    // Its own deadline: the step count the reply leaves. Asked of the context before the reply, it answers otherwise.
    const own = loopMachine.provide({
      guards: { isDeadlineExceeded: readingRecorded(({ context }) => context.steps >= 2) },
    });
    const explore = explored(orderStatusLoop, { maxSteps: 4 }, own);
    const compiled = figures(explore('compiled'));
    expect(compiled.keys.length).toBeGreaterThan(20);
    expect(compiled).toEqual(figures(explore('xstate')));
  }, 120_000);

  it("records every stop of a statechart given its own stopRun: the shortcut is for the loop's own", () => {
    const own = loopMachine.provide({
      actions: { stopRun: assign(({ event }) => ({ stop: { reason: 'cancelled', detail: event.type } })) },
    });
    const explore = explored(orderStatusLoop, { maxSteps: 3 }, own);
    const steps = stepsBothWays(explore('compiled'), own);
    expect(steps.length).toBeGreaterThan(100);
    // Only a task that fails for good stops without the stop recorded (its stop is `stopWithTaskFailure`'s).
    const ways = failedWays(own);
    expect(steps.filter((step) => step.stoppedOn !== null && !step.fullFired.includes(ways.stop))).toEqual([]);
    for (const { full, skipped } of steps) expect(skipped).toEqual(full);
    expect(figures(explore('compiled'))).toEqual(figures(explore('xstate')));
  }, 120_000);

  /** The numbers of the task-failure state's two ways on: to the next task, and to the run's stop. */
  function failedWays(machine: LoopMachine) {
    const compiledMachine = compileMachine(machine);
    if (compiledMachine === null) throw new Error('not compiled');
    const numberFrom = (target: string) =>
      compiledMachine.definitions.findIndex(
        (definition) => definition.source.key === 'FAILED' && definition.target?.[0]?.key === target,
      );
    return { next: numberFrom('READY'), stop: numberFrom('TERMINATED') };
  }

  it('stops a run on a task that fails for good without recording the failure, and only then', () => {
    const [, tasksThatContinue] = loops[0] as [string, unknown];
    const explore = explored(tasksThatContinue, {});
    const steps = stepsBothWays(explore('compiled'), loopMachine);
    for (const { full, skipped } of steps) expect(skipped).toEqual(full);
    const ways = failedWays(loopMachine);
    expect(ways.next).toBeGreaterThanOrEqual(0);
    expect(ways.stop).toBeGreaterThanOrEqual(0);
    // Both ways out of the task-failure state are taken: the first task's failure continues, the second's stops.
    const stoppedThere = steps.filter((step) => step.fullFired.includes(ways.stop));
    const continued = steps.filter((step) => step.fullFired.includes(ways.next));
    expect(stoppedThere.length).toBeGreaterThan(20);
    expect(continued.length).toBeGreaterThan(20);
    // Every stop through it is short-cut on its task's reason; a task that continues is never stopped.
    for (const step of stoppedThere) expect(step.stoppedOn).toMatch(/^(retries_exhausted|max_steps)$/);
    expect(new Set(stoppedThere.map((step) => step.stoppedOn))).toEqual(new Set(['retries_exhausted', 'max_steps']));
    for (const step of continued) expect(step.stoppedOn).toBeNull();
  }, 120_000);

  it("records a task's failure when the statechart brings its own failTask or task-failure guard", () => {
    const [, tasksThatContinue] = loops[0] as [string, unknown];
    const machines = [
      // Its own failure record: the reason the stop carries is not the transition's.
      loopMachine.provide({
        actions: { failTask: assign(() => ({ failure: { reason: 'fatal_error' as const, detail: 'own' } })) },
      }),
      // A guard that reads what failTask writes: asked before it, it would answer otherwise.
      loopMachine.provide({ guards: { canContinueAfterTaskFailure: ({ context }) => context.failure === null } }),
    ];
    for (const machine of machines) {
      const explore = explored(tasksThatContinue, {}, machine);
      const steps = stepsBothWays(explore('compiled'), machine);
      const ways = failedWays(machine);
      const stoppedThere = steps.filter((step) => step.fullFired.includes(ways.stop));
      expect(stoppedThere.length).toBeGreaterThan(20);
      for (const step of stoppedThere) expect(step.stoppedOn).toBeNull();
      for (const { full, skipped } of steps) expect(skipped).toEqual(full);
      expect(figures(explore('compiled'))).toEqual(figures(explore('xstate')));
    }
  }, 120_000);

  it('declines a statechart it does not cover, which is then explored through XState', () => {
    expect(compileMachine(loopMachine)).not.toBeNull();
    const parallel = createMachine({ type: 'parallel', states: { a: {}, b: {} } });
    expect(compileMachine(parallel as unknown as LoopMachine)).toBeNull();
  });
});
