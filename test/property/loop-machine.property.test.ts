/**
 * Property-based runs of the loop statechart under random, larger limits (maxSteps up to 25, up to four
 * tasks, up to four retries), where the exhaustive exploration of `test/model-based/` cannot go. Each run
 * picks its outcomes from the same abstract classes and checks the same invariants (see `random-run.ts`):
 * it ends within a bound derived from the limits, with exactly one stop reason and its status, steps and
 * model calls bounded, no spend once a budget is gone, and every event a resting state gets is handled or
 * ignored without a change. No fixed seed: fast-check prints the seed and the shrunk input on failure.
 */
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { createActor } from 'xstate';
import { loopMachine } from '../../machines/loop-machine.js';
import { DEFAULT_NO_PROGRESS } from '../../src/engine/constants.js';
import { abstractOutcomes, modelInput } from '../model-based/abstract-events.js';
import type { StopReason } from '../../machines/types.js';
import { createTransitionTracer } from '../../src/tooling/verify/transition-catalog.js';
import { faultsAfterModelCall, judgedEvaluations } from './driver-outcomes.js';
import { configurationFrom, configurationKnobs, type ConfigurationKnobs } from './random-configuration.js';
import { runToEnd } from './random-run.js';

/**
 * Choices, cycled when a run outlives them. Unbiased, so that each choice's remainder and quotient (kind and
 * outcome, see `pickOutcome`) are spread out; shrinking still drives them towards 0, the first plain outcome.
 */
const choices = fc.array(fc.noBias(fc.nat()), { minLength: 1, maxLength: 100 });

const NUM_RUNS = 300;

describe('loop statechart under random limits (property-based)', () => {
  it('ends every run within its event bound, with one stop reason, and never spends once a budget is gone', () => {
    const tracer = createTransitionTracer();
    const reasons = new Map<StopReason, number>();
    let runs = 0;
    let longest = { events: 0, bound: 0 };
    let strayEventsHandled = 0;
    fc.assert(
      fc.property(configurationKnobs, choices, (knobs, picks) => {
        const report = runToEnd(configurationFrom(knobs), picks, tracer, { extraOutcomes: faultsAfterModelCall });
        runs += 1;
        reasons.set(report.stopReason, (reasons.get(report.stopReason) ?? 0) + 1);
        if (report.events > longest.events) longest = { events: report.events, bound: report.bound };
        strayEventsHandled += report.strayEventsHandled;
      }),
      { numRuns: NUM_RUNS },
    );
    const seen = [...reasons].sort(([, a], [, b]) => b - a).map(([reason, count]) => `${reason} ${count}`);
    console.log(
      `[property] ${runs} runs, longest ${longest.events} events (its bound ${longest.bound}), stop reasons: ${seen.join(', ')}`,
    );
    // No state handles an event it does not wait for: the abstract outcomes name every event a state takes.
    expect(strayEventsHandled).toBe(0);
  });
});

/**
 * A counterexample fast-check found and shrank (its input-budget twin, with the output budget standing, was
 * found too): one task, and the first light call uses up the output budget.
 */
const JUDGE_AFTER_CROSSING: [ConfigurationKnobs, number[]] = [
  {
    maxSteps: 1,
    maxStepsPerTask: 100,
    maxToolCalls: 100,
    plan: false,
    maxRetries: 0,
    maxTransportAttempts: 1,
    maxTransportRetries: Infinity,
    maxArgumentRepairs: 0,
    repeatedToolCall: 2,
    unchangedState: 2,
    sameEvaluatorReason: 2,
    duplicateObservation: 2,
    planStall: 2,
    sameParseError: 2,
    onFailure: ['stop'],
    deadlineMs: 120,
    requestEstimate: 50,
    lightInputTokens: 50,
    lightOutputTokens: 5,
    lightCallsToCross: { input: 100, output: 1, cost: 100 },
  },
  [497_875_700, 0],
];

describe('LLM judges and the spend budgets', () => {
  // A final reply that used up a budget is still evaluated, but the evaluate effect then says
  // `mayCallModel: false` and the driver skips the judge. Once-found counterexample, kept as an example:
  // run.started:fits > model.responded:final:changed:light:within (output 5 of 5) > a judged evaluation.
  it('pays an LLM judge only while every budget stands', () => {
    const tracer = createTransitionTracer();
    fc.assert(
      fc.property(configurationKnobs, choices, (knobs, picks) => {
        runToEnd(configurationFrom(knobs), picks, tracer, {
          extraOutcomes: (config, snapshot) => [
            ...faultsAfterModelCall(config, snapshot),
            ...judgedEvaluations(config, snapshot),
          ],
        });
      }),
      { numRuns: NUM_RUNS, examples: [JUDGE_AFTER_CROSSING] },
    );
  });
});

/** Outcomes of legitimate work: new calls with new results, new answers, transient failures that are retried. */
const LEGITIMATE_WORK = [
  /^run\.started:fits$/,
  /^model\.responded:(tools|final):changed:light:within$/,
  /^tools\.completed:(ok-new|timeout):within$/,
  /^evaluation\.completed:(pass|fail-A|fail-B):within$/,
  /^model\.failed:transient-short:within$/,
  /^backoff\.elapsed:on-time$/,
];

describe('the default no-progress thresholds and legitimate work (property-based)', () => {
  it('never stop a loop of distinct calls with new results, changing answers and transient failures with no_progress', () => {
    const longRun = fc.record({
      maxSteps: fc.integer({ min: 10, max: 60 }),
      tasks: fc.integer({ min: 1, max: 3 }),
      maxRetries: fc.integer({ min: 0, max: 4 }),
      maxTransportAttempts: fc.integer({ min: 1, max: 4 }),
    });
    let runs = 0;
    const reasons = new Map<StopReason, number>();
    fc.assert(
      fc.property(longRun, choices, ({ maxSteps, tasks, maxRetries, maxTransportAttempts }, picks) => {
        const base = configurationFrom({
          ...JUDGE_AFTER_CROSSING[0],
          maxSteps,
          maxStepsPerTask: 100,
          maxToolCalls: 1_000,
          maxRetries,
          maxTransportAttempts,
          deadlineMs: 1e9,
          onFailure: Array.from({ length: tasks }, () => 'continue' as const),
          lightCallsToCross: { input: 1_000, output: 1_000, cost: 1_000 },
        });
        const config = { ...base, noProgress: { ...DEFAULT_NO_PROGRESS } };
        const actor = createActor(loopMachine, { input: modelInput(config) }).start();
        for (let index = 0; actor.getSnapshot().status !== 'done' && index < 10_000; index++) {
          const outcomes = abstractOutcomes(config, actor.getSnapshot()).filter((outcome) =>
            LEGITIMATE_WORK.some((pattern) => pattern.test(outcome.label)),
          );
          const outcome = outcomes[(picks[index % picks.length] ?? 0) % outcomes.length];
          if (outcome === undefined)
            throw new Error(`no legitimate outcome in ${JSON.stringify(actor.getSnapshot().value)}`);
          actor.send(outcome.event);
        }
        const output = actor.getSnapshot().output;
        runs += 1;
        if (output !== undefined) reasons.set(output.stopReason, (reasons.get(output.stopReason) ?? 0) + 1);
        expect(output?.stopReason).not.toBe('no_progress');
      }),
      { numRuns: NUM_RUNS },
    );
    console.log(
      `[property] legitimate work: ${runs} runs, stop reasons: ${[...reasons].map(([reason, count]) => `${reason} ${count}`).join(', ')}`,
    );
  });
});
