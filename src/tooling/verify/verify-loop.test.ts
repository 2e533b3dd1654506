import { describe, expect, it } from 'vitest';
import { z } from 'zod';
import orderStatusLoop from '../../../examples/order-status.js';
import toolFeedbackConfig from '../../../examples/tool-feedback.js';
import weeklyReportLoop from '../../../examples/weekly-report.js';
import { createActor } from 'xstate';
import { loopMachine } from '../../../machines/loop-machine.js';
import { evaluators } from '../../index.js';
import { createLoop } from '../../index.js';
import { memoryStore } from '../../index.js';
import { defineTool } from '../../index.js';
import type { Model } from '../../index.js';
import { reply, scriptedModel } from '../../testing/index.js';
import { STOP_REASONS } from '../../../machines/types.js';
import { DEFAULT_STATE_BOUND, StateSpaceTooLargeError } from './explore.js';
import { resolveForVerify } from './resolve-for-verify.js';
import { verifyModelOf } from './verify-model.js';
import { verifyLoopConfig, type VerifyOptions, type VerifyReport } from './verify-loop.js';

function verify(exported: unknown, options: VerifyOptions = {}): VerifyReport {
  const { config, limits, notes } = resolveForVerify(exported);
  return verifyLoopConfig(config, { ...options, limits, notes });
}

const lookup = defineTool({
  name: 'lookup',
  description: 'Look a record up',
  input: z.object({ id: z.string() }),
  access: 'read',
  execute: ({ id }) => ({ id }),
});
const wipe = defineTool({
  name: 'wipe_database',
  description: 'Delete everything',
  input: z.object({}),
  access: 'destructive',
  execute: () => 'wiped',
});
/** A model the price table does not know. */
const localModel: Model = {
  id: 'local-llama',
  generate: () => Promise.resolve({ text: 'ok', toolCalls: [], usage: { inputTokens: 1, outputTokens: 1 } }),
};

describe('verify on the examples, at their real limits', () => {
  it('order-status (maxSteps 4, maxRetries 2, maxCostUsd 0.05, one read tool) is bounded', () => {
    const report = verify(orderStatusLoop);
    expect(report.violations).toEqual([]);
    expect(report.bounded).toBe(true);
    expect(report.explored.scaledTo).toBeNull();
    // Model calls: 4 decisions (maxSteps), each call with maxTransportAttempts 3 (maxRetries 2 + 1, as the example
    // sets only maxRetries): 4 × 3 = 12 when every call fails twice first; the formula's bound is reached.
    expect(report.worstCase.modelCalls.value).toBe(4 * 3);
    // Tool calls: maxToolCalls defaults to maxSteps × maxToolCallsPerReply = 4 × 20 = 80, but the 4th decision
    // runs no tools, so (4 − 1) × 20 = 60 is the tighter bound, and a run of 3 full rounds reaches it.
    expect(report.worstCase.toolCalls.value).toBe(Math.min(4 * 20, (4 - 1) * 20));
    // Tokens: the default budgets, plus the one call that crosses them.
    expect(report.worstCase.inputTokens).toMatchObject({ value: 200_000, plusOneCall: true });
    expect(report.worstCase.outputTokens).toMatchObject({ value: 20_000, plusOneCall: true });
    // Cost: the scripted model costs $0.4 / $1.6 per million; the tokens alone allow
    // 200,000 × 0.4 / 1e6 + 20,000 × 1.6 / 1e6 = 0.08 + 0.032 = $0.112 > maxCostUsd $0.05, so $0.05 + one call.
    expect(report.worstCase.costUsd).toMatchObject({ value: 0.05, plusOneCall: true });
    expect(report.worstCase.costUsd.formula).toContain('$0.112');
    // A read-only tool under the default policy: never denied, never waiting for approval, never of unknown outcome.
    expect(report.stopReasons).toEqual([
      'completed',
      'max_steps',
      'deadline_exceeded',
      'budget_exhausted',
      'no_progress',
      'tool_unavailable',
      'cancelled',
      'retries_exhausted',
      'fatal_error',
    ]);
    expect(report.coverage.fired).toBeGreaterThan(40);
    expect(report.coverage.fired + report.coverage.unfired.length).toBe(report.coverage.total);
  });

  it('weekly-report (three tasks, maxSteps 8, maxRetries 2, no tools) is bounded', () => {
    const report = verify(weeklyReportLoop);
    expect(report.violations).toEqual([]);
    // Model calls: 8 decisions × 3 attempts each = 24 (a task that fails for good stops the run, and its call
    // that failed three times comes instead of a decision: 7 × 3 + 3 is 24 too).
    expect(report.worstCase.modelCalls.value).toBe(8 * 3);
    // No tools: no round ever runs (the bound min(8 × 20, 7 × 20) = 140 is never approached).
    expect(report.worstCase.toolCalls.value).toBe(0);
    expect(report.worstCase.toolCalls.formula).toContain('bound 140');
    // Cost: maxCostUsd is the default $1, above what the token budgets allow:
    // 200,000 × 0.4 / 1e6 + 20,000 × 1.6 / 1e6 = $0.112.
    expect(report.worstCase.costUsd.value).toBeCloseTo(200_000 * 0.4e-6 + 20_000 * 1.6e-6, 12);
    expect(report.stopReasons).not.toContain('tool_unavailable');
    expect(report.stopReasons).not.toContain('needs_human');
  });
});

describe('verify on tool-feedback, exactly at its real limits', () => {
  it('six tasks, maxSteps 24, maxStepsPerTask 5, four read tools: bounded, explored exactly, well inside the state bound', () => {
    const { config } = resolveForVerify(toolFeedbackConfig);
    const report = verifyLoopConfig(config);
    expect(report.explored.scaledTo).toBeNull();
    expect(report.limits).toMatchObject({
      maxSteps: 24,
      maxStepsPerTask: 5,
      maxRetries: 2,
      maxCostUsd: 0.05,
      deadlineMs: 60_000,
    });
    expect(report.explored.states).toBeLessThan(DEFAULT_STATE_BOUND / 3);
    expect(report.explored.statesPerSecond).toBeGreaterThan(0);
    expect(report.violations).toEqual([]);
    // Model calls: 24 decisions × 3 transport attempts each = 72, the formula's bound, reached.
    expect(report.worstCase.modelCalls.value).toBe(24 * 3);
    // Tool calls: each task must pass on a final reply, and a decision at a bound (the task's 5th, the run's 24th)
    // runs no tools. Four tasks of 4 full rounds and a final reply take 20 decisions; the fifth task gets decisions
    // 21 to 24, three of them rounds: 19 rounds × 20 calls = 380, below the bound (24 − 1) × 20 = 460.
    expect(report.worstCase.toolCalls.value).toBe((4 * 4 + 3) * 20);
    expect(report.worstCase.toolCalls.formula).toContain('bound 460');
    expect(report.worstCase.costUsd).toMatchObject({ value: 0.05, plusOneCall: true });
    expect(report.stopReasons).toEqual([
      'completed',
      'max_steps',
      'deadline_exceeded',
      'budget_exhausted',
      'no_progress',
      'tool_unavailable',
      'cancelled',
      'retries_exhausted',
      'fatal_error',
    ]);
    expect(report.explored.reductions).toContain(
      'symmetry: 4 interchangeable tools (calculator, time_service, knowledge_base, knowledge_archive: allowed, not destructive) explored as one kind of tool call',
    );
    expect(report.explored.reductions.join('\n')).toMatch(
      /abstract counters: [\d,]+ states with the step limit out of reach/,
    );
    // Both worst runs replay through a fresh actor to the figure they claim.
    for (const [figure, counter] of [
      ['modelCalls', 'modelCalls'],
      ['toolCalls', 'toolCalls'],
    ] as const) {
      const actor = createActor(loopMachine, { input: verifyModelOf(config).input }).start();
      for (const step of report.worstCase[figure].run ?? []) actor.send(step.event);
      expect(actor.getSnapshot().context.usage[counter]).toBe(report.worstCase[figure].value);
      actor.stop();
    }
  }, 120_000);
});

describe('verify rejects broken loops with a counterexample', () => {
  it('maxSteps switched off with Infinity: a cycle of tool rounds no budget guard stops', () => {
    const report = verify({ model: scriptedModel([reply('x')]), tools: [lookup], limits: { maxSteps: Infinity } });
    expect(report.bounded).toBe(false);
    const cycle = report.violations.find((violation) => violation.kind === 'unbounded_cycle');
    expect(cycle?.message).toContain('maxSteps');
    expect(cycle?.counterexample[0]?.outcome).toBe('run.started');
    // The repeating part decides and acts: a new result every round is progress, so no signal stops it either.
    expect(cycle?.cycle?.map((step) => step.state)).toContain('RUNNING.acting');
    expect(cycle?.cycle?.some((step) => step.outcome.startsWith('model.responded: tool calls (lookup)'))).toBe(true);
    expect(report.worstCase.modelCalls.value).toBeNull();
    expect(report.notes.join()).toContain('createLoop refuses this config (limits.maxSteps');
  });

  it('maxTransportAttempts switched off with Infinity: a call may fail and back off for ever', () => {
    const report = verify({
      model: scriptedModel([reply('x')]),
      limits: { maxTransportAttempts: Infinity, deadlineMs: Infinity },
    });
    expect(report.bounded).toBe(false);
    const cycle = report.violations.find((violation) => violation.kind === 'unbounded_cycle');
    expect(cycle?.message).toContain('maxTransportAttempts switched off with Infinity');
    expect(cycle?.cycle?.map((step) => step.outcome)).toEqual(
      expect.arrayContaining(['model.failed: transient (503)', 'backoff.elapsed']),
    );
    expect(report.notes.join()).toContain('createLoop refuses this config (limits.maxTransportAttempts');
  });

  it('every spend budget switched off with Infinity: spend nothing bounds', () => {
    const loop = createLoop({
      model: scriptedModel([reply('x')]),
      limits: { maxCostUsd: Infinity, maxInputTokens: Infinity, maxOutputTokens: Infinity },
    });
    const report = verify(loop);
    expect(report.bounded).toBe(false);
    const [violation] = report.violations;
    expect(violation?.kind).toBe('unbounded_spend');
    expect(violation?.message).toMatch(/inputTokens: unbounded.*outputTokens: unbounded.*costUsd: unbounded/);
    expect(violation?.counterexample.map((step) => step.outcome)).toEqual([
      'run.started',
      'model.responded: final reply, state changed',
    ]);
    // Steps stay bounded: 10 decisions × 3 transport attempts each.
    expect(report.worstCase.modelCalls.value).toBe(10 * 3);
  });

  it('a destructive tool under an allow-all policy runs without approval', () => {
    const loop = createLoop({
      model: scriptedModel([reply('x')]),
      tools: [lookup, wipe],
      policy: { allow: ['read', 'write', 'destructive'], requireApproval: [] },
      limits: { maxSteps: 3 },
    });
    const report = verify(loop);
    expect(report.bounded).toBe(false);
    const violation = report.violations.find((candidate) => candidate.kind === 'destructive_without_approval');
    expect(violation?.message).toContain('"wipe_database"');
    expect(violation?.counterexample.map((step) => `${step.state}: ${step.outcome}`)).toEqual([
      'READY: run.started',
      'RUNNING.deciding: model.responded: tool call wipe_database (destructive, allowed without approval), state changed',
    ]);
  });

  it('the default policy makes the same tool wait for a person: no violation', () => {
    const report = verify(createLoop({ model: scriptedModel([reply('x')]), tools: [wipe], limits: { maxSteps: 3 } }));
    expect(report.violations).toEqual([]);
    expect(report.stopReasons).toContain('needs_human');
  });

  it('a cost budget with an unpriced model, set explicitly (createLoop refuses it) or left at its default', () => {
    const explicit = verify({ model: localModel, limits: { maxCostUsd: 0.5, maxSteps: 3 } });
    expect(explicit.violations.map((violation) => violation.kind)).toEqual(['unpriced_cost_budget']);
    expect(explicit.violations[0]?.message).toContain('cost budget with an unpriced model: "local-llama"');
    expect(explicit.violations[0]?.counterexample.length).toBe(2);
    // The default $1 budget cannot see the spend either: createLoop only warns, verify fails.
    const byDefault = verify(createLoop({ model: localModel, limits: { maxSteps: 3 } }));
    expect(byDefault.violations.map((violation) => violation.kind)).toEqual(['unpriced_cost_budget']);
    expect(byDefault.worstCase.costUsd.value).toBeNull();
    // Priced through `prices`, it passes.
    const priced = verify(
      createLoop({
        model: localModel,
        prices: { 'local-llama': { inputPerMillion: 0, outputPerMillion: 0.1 } },
        limits: { maxSteps: 3 },
      }),
    );
    expect(priced.violations).toEqual([]);
  });
});

describe('tenant budgets', () => {
  it('a run holds at most its tenant budget: spend switched off for the run is bounded by the tenant', () => {
    const loop = createLoop({
      model: scriptedModel([reply('x')]),
      store: memoryStore(),
      tenant: { id: 'acme', maxCostUsd: 2, maxInputTokens: 1_000_000, maxOutputTokens: 100_000 },
      limits: { maxSteps: 3, maxCostUsd: Infinity, maxInputTokens: Infinity, maxOutputTokens: Infinity },
    });
    const report = verify(loop);
    expect(report.violations).toEqual([]);
    // The tenant's caps are the run's: 1,000,000 × $0.4/M + 100,000 × $1.6/M = $0.56, below the tenant's $2.
    expect(report.worstCase.costUsd.value).toBeCloseTo(1_000_000 * 0.4e-6 + 100_000 * 1.6e-6, 12);
    expect(report.notes.join()).toContain(
      'tenant "acme" caps what one run may hold: maxCostUsd 2, maxInputTokens 1000000, maxOutputTokens 100000',
    );
  });
});

describe('a space over the state bound', () => {
  it('is an error that says to use --scale, never a partial answer', () => {
    expect(() => verify(orderStatusLoop, { maxStates: 200 })).toThrow(StateSpaceTooLargeError);
    expect(() => verify(orderStatusLoop, { maxStates: 200 })).toThrow(/--scale/);
  });

  it('is explored with maxSteps scaled down under --scale, and the report says so', () => {
    const report = verify(weeklyReportLoop, { maxStates: 1_000, scale: true });
    expect(report.explored.scaledTo).toEqual({ maxSteps: 4, maxStepsPerTask: 4, maxToolCalls: 80 });
    expect(report.notes.join()).toContain('explored with maxSteps 4 (not 8)');
    // The real figure comes from the formula at the real limits: maxTransportAttempts 3 × maxSteps 8.
    expect(report.worstCase.modelCalls.value).toBe(24);
    expect(report.worstCase.modelCalls.formula).toContain('from the formula');
  });
});

describe('the checks find what a broken statechart does (guards replaced on purpose)', () => {
  const toolLoop = () => createLoop({ model: scriptedModel([reply('x')]), tools: [lookup], limits: { maxSteps: 3 } });

  it('a machine whose step guards never fire has a cycle no budget guard stops', () => {
    const machine = loopMachine.provide({
      guards: { isStepLimitReached: () => false, isTaskStepLimitReached: () => false },
    });
    const report = verify(toolLoop(), { machine });
    expect(report.violations.map((violation) => violation.kind)).toContain('unbounded_cycle');
    expect(report.worstCase.modelCalls.value).toBeNull();
  });

  it('a machine whose spend guard never fires lets a second call cross a budget', () => {
    const machine = loopMachine.provide({ guards: { isSpendBudgetExhausted: () => false } });
    const report = verify(toolLoop(), { machine });
    const crossed = report.violations.find((violation) => violation.kind === 'budget_crossed_twice');
    expect(crossed?.message).toContain('was paid after maxInputTokens was already spent');
    // The shortest: a first request whose estimate is already over the input budget is sent all the same.
    expect(crossed?.counterexample.map((step) => step.outcome)).toEqual([
      'run.started: first request over the input budget',
      'model.responded: final reply, state changed',
    ]);
  });
});

describe('the abstraction reaches the whole statechart', () => {
  it('loops using every feature, between them, fire every transition definition of the machine', () => {
    const save = defineTool({
      name: 'save',
      description: 'Save a record',
      input: z.object({}),
      access: 'write',
      execute: () => 'saved',
    });
    // Runs under the policy below, and may time out with its outcome unknown.
    const fetchOnce = defineTool({
      name: 'fetch_once',
      description: 'Read a queue',
      input: z.object({}),
      access: 'read',
      idempotent: false,
      execute: () => 'item',
    });
    const tasks = [
      { id: 'first', prompt: 'first', onFailure: 'continue' as const },
      { id: 'second', prompt: 'second' },
    ];
    const limits = { maxSteps: 4, maxStepsPerTask: 3, maxRetries: 1, maxToolCalls: 2 };
    const model = scriptedModel([reply('x')]);
    const reports = [
      // Signals on the first occurrence; reads run, writes are denied, destructive calls wait for a person.
      verify(
        createLoop({
          model,
          tools: [fetchOnce, save, wipe],
          policy: { allow: ['read'], requireApproval: ['destructive'] },
          plan: true,
          tasks,
          limits,
          noProgress: {
            repeatedToolCall: 2,
            unchangedState: 2,
            sameEvaluatorReason: 1,
            duplicateObservation: 1,
            planStall: 1,
            sameParseError: 1,
          },
        }),
      ),
      // Room for a nudge and the stop after it, and for reflections; an output may wait for a person's review.
      verify(
        createLoop({
          model,
          tools: [lookup],
          plan: true,
          tasks,
          evaluate: [evaluators.review({ when: () => true })],
          limits: { maxSteps: 5, maxStepsPerTask: 4, maxRetries: 1 },
          noProgress: { planStall: 1 },
        }),
      ),
    ];
    const unfired = reports.map((report) => new Set(report.coverage.unfired));
    const neverFired = [...(unfired[0] ?? [])].filter((id) => unfired.every((set) => set.has(id)));
    expect(neverFired).toEqual([]);
    const reasons = new Set(reports.flatMap((report) => report.stopReasons));
    expect([...reasons].sort()).toEqual([...STOP_REASONS].sort());
  });
});

describe('worst-case model calls with more retry layers', () => {
  it('a task that may fail and continue adds its one failed call', () => {
    const loop = createLoop({
      model: scriptedModel([reply('x')]),
      tasks: [
        { id: 'optional', prompt: 'try', onFailure: 'continue' },
        { id: 'main', prompt: 'do' },
      ],
      limits: { maxSteps: 4, maxRetries: 1 },
    });
    const report = verify(loop);
    expect(report.violations).toEqual([]);
    // maxRetries 1 gives each call 2 transport attempts. The optional task: a call failing both (2 calls, no
    // decision), then it is skipped; the main task: 4 decisions, each after a failed attempt (8 calls): 10
    // = maxTransportAttempts 2 × (maxSteps 4 + 1 task that may fail and continue).
    expect(report.worstCase.modelCalls.value).toBe(2 * (4 + 1));
    expect(report.worstCase.modelCalls.formula).toContain('bound 10');
  });

  it('an LLM judge adds its calls per evaluation, each judge call with transport attempts of its own', () => {
    const judge = scriptedModel([reply('{"passed": true, "reason": "ok"}')]);
    const loop = createLoop({
      model: scriptedModel([reply('x')]),
      evaluate: [
        evaluators.rule((text: string) => text.length > 0, 'say something'),
        evaluators.judge({ model: judge, criteria: 'polite' }),
      ],
      limits: { maxSteps: 3, maxRetries: 1 },
    });
    const report = verify(loop);
    expect(report.violations).toEqual([]);
    // maxRetries 1: 2 transport attempts per call. The bound: 2 × maxSteps 3 + 2 × maxSteps 3 × 1 judge = 12. The
    // worst run makes 10: with maxRetries 1 only 2 answers are judged (one reflection), so 3 decisions (an empty
    // reply repaired, two answers) and 2 judge calls, every call after a failed attempt: 2 × (3 + 2) = 10.
    expect(report.worstCase.modelCalls.value).toBe(2 * (3 + 2));
    const run = report.worstCase.modelCalls.run ?? [];
    const judged = run.filter((step) => step.event.type === 'evaluation.completed').length;
    const decisions = run.filter((step) => step.event.type === 'model.responded').length;
    expect([decisions, judged]).toEqual([3, 2]);
    expect(report.worstCase.modelCalls.formula).toContain('bound 12');
    expect(report.notes.join()).toContain('LLM judges are priced by their own model');
  });
});

describe('worst-case model calls with transport attempts per call', () => {
  it('a run-wide maxTransportRetries caps the retries of every call together: each call once, plus the cap', () => {
    const loop = createLoop({
      model: scriptedModel([reply('x')]),
      tools: [lookup],
      limits: { maxSteps: 4, maxTransportAttempts: 3, maxTransportRetries: 2 },
    });
    const report = verify(loop);
    expect(report.violations).toEqual([]);
    // Per call it would be 3 × 4 = 12; the run may retry only twice in all: 4 decisions + 2 retries = 6.
    expect(report.worstCase.modelCalls.value).toBe(4 + 2);
    expect(report.worstCase.modelCalls.formula).toContain(
      'bound 6 = each call once (maxSteps 4) + maxTransportRetries 2 retries in all (per call: 12)',
    );
    const actor = createActor(loopMachine, { input: verifyModelOf(resolveForVerify(loop).config).input }).start();
    for (const step of report.worstCase.modelCalls.run ?? []) actor.send(step.event);
    expect(actor.getSnapshot().context.usage.modelCalls).toBe(6);
    actor.stop();
  });

  it('a context summary before each attempt has attempts of its own', () => {
    const loop = createLoop({
      model: scriptedModel([reply('x')]),
      limits: { maxSteps: 2, maxTransportAttempts: 2 },
      context: { strategy: 'summarize', maxInputTokensPerCall: 1_000 },
    });
    const report = verify(loop);
    expect(report.violations).toEqual([]);
    // 2 decisions × 2 attempts, each attempt after a summary that took its 2 attempts: 2 × 2 × (1 + 2) = 12.
    expect(report.worstCase.modelCalls.value).toBe(2 * 2 * (1 + 2));
    expect(report.worstCase.modelCalls.formula).toContain('bound 12');
  });

  it("a context summary with a run-wide cap: its retries and the main call's draw on the same total", () => {
    const loop = createLoop({
      model: scriptedModel([reply('x')]),
      limits: { maxSteps: 2, maxTransportAttempts: 2, maxTransportRetries: 1 },
      context: { strategy: 'summarize', maxInputTokensPerCall: 1_000 },
    });
    const report = verify(loop);
    expect(report.violations).toEqual([]);
    // Each decision once with its summary (2 × 2), plus the one retry, which brings one more summary with it: 6;
    // the formula allows 2 + (2 + 1) + 1 = 6 too.
    expect(report.worstCase.modelCalls.value).toBe(6);
    expect(report.worstCase.modelCalls.formula).toContain('bound 6');
  });
});

describe('counterexamples replay through the statechart', () => {
  it('the events of a counterexample, sent to a fresh actor, reach the violation', () => {
    const loop = createLoop({
      model: scriptedModel([reply('x')]),
      tools: [wipe],
      policy: { allow: ['destructive'], requireApproval: [] },
      limits: { maxSteps: 3 },
    });
    const { config } = resolveForVerify(loop);
    const report = verifyLoopConfig(config);
    const [violation] = report.violations;
    const actor = createActor(loopMachine, { input: verifyModelOf(config).input }).start();
    for (const step of violation?.counterexample ?? []) actor.send(step.event);
    // The destructive call is about to run: the machine waits for its tool round.
    expect(actor.getSnapshot().matches({ RUNNING: 'acting' })).toBe(true);
    actor.stop();
  });

  it('a cycle, sent again and again, comes back to the same state and never ends the run', () => {
    const { config, limits } = resolveForVerify({
      model: scriptedModel([reply('x')]),
      tools: [lookup],
      limits: { maxSteps: Infinity },
    });
    const report = verifyLoopConfig(config, { limits });
    const violation = report.violations.find((candidate) => candidate.kind === 'unbounded_cycle');
    const actor = createActor(loopMachine, { input: verifyModelOf(config, limits).input }).start();
    for (const step of violation?.counterexample ?? []) actor.send(step.event);
    const entry = actor.getSnapshot().value;
    for (let round = 0; round < 100; round += 1) for (const step of violation?.cycle ?? []) actor.send(step.event);
    expect(actor.getSnapshot().status).toBe('active');
    expect(actor.getSnapshot().value).toEqual(entry);
    expect(actor.getSnapshot().context.steps).toBeGreaterThan(100);
    actor.stop();
  });
});

describe('what a loop file may export', () => {
  it('a loop that exposes the config it was created with (loop.config) is verified from that config', () => {
    const config = { model: scriptedModel([reply('x')]), limits: { maxSteps: Infinity }, tools: [lookup] };
    const loopLike = { run: () => Promise.reject(new Error('not run')), config };
    expect(verify(loopLike).violations.map((violation) => violation.kind)).toEqual(['unbounded_cycle']);
  });
});

describe('verify and human review of outputs', () => {
  const judgeModel = scriptedModel([reply('{"passed": true, "reason": "ok"}')], { id: 'scripted' });
  const checks = (extra: Parameters<typeof evaluators.judge>[0] | null) => [
    evaluators.json(),
    ...(extra === null ? [] : [evaluators.judge(extra)]),
  ];

  it('a loop that may ask for a review can stop needs_human (and not otherwise); the wait is named', () => {
    const reviewed = verify(
      createLoop({
        model: scriptedModel([reply('x')]),
        evaluate: [...checks(null), evaluators.review({ when: () => true })],
        limits: { maxSteps: 3, deadlineMs: Infinity },
      }),
    );
    expect(reviewed.violations).toEqual([]);
    expect(reviewed.stopReasons).toContain('needs_human');
    expect(reviewed.unboundedWaits.join('\n')).toContain('a review of an output never expires');
    const unreviewed = verify(
      createLoop({ model: scriptedModel([reply('x')]), evaluate: checks(null), limits: { maxSteps: 3 } }),
    );
    expect(unreviewed.stopReasons).not.toContain('needs_human');
    // A judge whose split vote asks a person can stop needs_human too.
    const split = verify(
      createLoop({
        model: scriptedModel([reply('x')]),
        evaluate: checks({ model: judgeModel, criteria: 'c', samples: 3, reviewOnSplit: true }),
        limits: { maxSteps: 3 },
      }),
    );
    expect(split.stopReasons).toContain('needs_human');
  });

  it("counts each of a judge's samples as a judge call per evaluation", () => {
    const one = verify(
      createLoop({
        model: scriptedModel([reply('x')]),
        evaluate: checks({ model: judgeModel, criteria: 'c' }),
        limits: { maxSteps: 3 },
      }),
    );
    const three = verify(
      createLoop({
        model: scriptedModel([reply('x')]),
        evaluate: checks({ model: judgeModel, criteria: 'c', samples: 3 }),
        limits: { maxSteps: 3 },
      }),
    );
    expect(three.worstCase.modelCalls.formula).toContain('3 judge call(s) per evaluation');
    expect(three.worstCase.modelCalls.value ?? 0).toBeGreaterThan(one.worstCase.modelCalls.value ?? 0);
  });
});
