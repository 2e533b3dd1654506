import { describe, expect, it } from 'vitest';
import { z } from 'zod';
import { createLoop, evaluators } from '../../index.js';
import { reply, scriptedModel } from '../../testing/index.js';
import incidentLoop from '../../../examples/incident.js';
import triageLoop from '../../../bench/triage-loop.js';
import { getPendingEffect } from '../../../machines/pending-effect.js';
import { abstractOutcomes } from './abstract-outcomes.js';
import { exploreLoop } from './explore.js';
import { resolveForVerify } from './resolve-for-verify.js';
import { verifyModelOf } from './verify-model.js';

function graphOf(loop: unknown, maxSteps: number) {
  const { config } = resolveForVerify(loop);
  return exploreLoop(verifyModelOf(config, { ...config.limits, maxSteps }));
}

describe('the outcomes of a model call, a tool round, a backoff or an evaluation, made once per exploration for the states that read alike', () => {
  it.each([
    ['incident', incidentLoop, 6],
    ['triage (22 tools)', triageLoop, 8],
  ])(
    'are, in every state of the %s loop, what computing them afresh gives',
    (_name, loop, maxSteps) => {
      const graph = graphOf(loop, maxSteps);
      let calls = 0;
      let rounds = 0;
      let backoffs = 0;
      let evaluations = 0;
      for (const state of graph.states) {
        // New options each time: a memo of their own, so these are computed afresh.
        const fresh = abstractOutcomes(state, graph.model, { ...graph.outcomeOptions });
        expect(abstractOutcomes(state, graph.model, graph.outcomeOptions)).toEqual(fresh);
        if (getPendingEffect(state).kind === 'callModel') calls += 1;
        if (getPendingEffect(state).kind === 'runTools') rounds += 1;
        if (getPendingEffect(state).kind === 'sleep') backoffs += 1;
        if (getPendingEffect(state).kind === 'evaluate') evaluations += 1;
      }
      expect(evaluations).toBeGreaterThan(20);
      expect(calls).toBeGreaterThan(100);
      expect(rounds).toBeGreaterThan(20);
      expect(backoffs).toBeGreaterThan(20);
    },
    60_000,
  );

  it('is one list for two states that read the same, and another for a state that reads otherwise', () => {
    const graph = graphOf(incidentLoop, 6);
    const deciding = graph.states.filter((state) => getPendingEffect(state).kind === 'callModel');
    const outcomes = (context: (typeof deciding)[number]['context']) =>
      abstractOutcomes({ ...(deciding[1] as (typeof deciding)[number]), context }, graph.model, graph.outcomeOptions);
    const { context } = deciding[1] as (typeof deciding)[number];
    // A copy reads the same, and so does a context that differs in what the outcomes never read.
    expect(outcomes({ ...context })).toBe(outcomes(context));
    expect(outcomes({ ...context, failedTasks: context.failedTasks + 1 })).toBe(outcomes(context));
    // Each value read gives its own list, equal to the one computed afresh.
    const variants = [
      { ...context, lastEventAt: context.lastEventAt + 1 },
      { ...context, startedAt: null },
      { ...context, nextRequestTokens: context.nextRequestTokens === 2 ? 1 : 2 },
      { ...context, task: { ...context.task, steps: context.task.steps === 0 ? 1 : 0 } },
      { ...context, progress: { ...context.progress, lastStateDigest: 'text-1' } },
      { ...context, progress: { ...context.progress, lastStateDigest: null } },
    ];
    for (const variant of variants) {
      expect(outcomes(variant)).not.toBe(outcomes(context));
      const fresh = abstractOutcomes({ ...(deciding[1] as (typeof deciding)[number]), context: variant }, graph.model, {
        ...graph.outcomeOptions,
      });
      expect(outcomes(variant)).toEqual(fresh);
    }
  }, 60_000);

  it('is one list of tool round outcomes for states that read the same, and another for each value read', () => {
    const graph = graphOf(triageLoop, 8);
    const acting = graph.states.filter((state) => getPendingEffect(state).kind === 'runTools');
    const state = acting.find((candidate) => candidate.context.progress.repeatCount >= 1) ?? acting[0];
    if (state === undefined) throw new Error('no state runs tools');
    const outcomes = (context: typeof state.context) =>
      abstractOutcomes({ ...state, context }, graph.model, graph.outcomeOptions);
    const { context } = state;
    expect(outcomes({ ...context })).toBe(outcomes(context));
    expect(outcomes({ ...context, failedTasks: context.failedTasks + 1 })).toBe(outcomes(context));
    const { progress, usage } = context;
    const variants = [
      { ...context, lastEventAt: context.lastEventAt + 1 },
      { ...context, startedAt: null },
      { ...context, usage: { ...usage, toolCalls: context.limits.maxToolCalls - 1 } },
      { ...context, progress: { ...progress, repeatCount: progress.repeatCount + 1 } },
      { ...context, progress: { ...progress, repeatCount: 0 } },
      { ...context, progress: { ...progress, planActive: !progress.planActive } },
    ];
    for (const variant of variants) {
      expect(outcomes(variant)).not.toBe(outcomes(context));
      expect(outcomes(variant)).toEqual(
        abstractOutcomes({ ...state, context: variant }, graph.model, { ...graph.outcomeOptions }),
      );
    }
  }, 60_000);

  it('is one list of backoff outcomes for states that read the same, and another for each value read', () => {
    const graph = graphOf(triageLoop, 8);
    const state = graph.states.find((candidate) => getPendingEffect(candidate).kind === 'sleep');
    if (state === undefined) throw new Error('no state backs off');
    const outcomes = (context: typeof state.context) =>
      abstractOutcomes({ ...state, context }, graph.model, graph.outcomeOptions);
    const { context } = state;
    expect(outcomes({ ...context })).toBe(outcomes(context));
    expect(outcomes({ ...context, steps: context.steps + 1 })).toBe(outcomes(context));
    const variants = [
      { ...context, lastEventAt: context.lastEventAt + 1 },
      { ...context, startedAt: null },
      { ...context, retryAt: (context.retryAt ?? context.lastEventAt) + 5 },
    ];
    for (const variant of variants) {
      expect(outcomes(variant)).not.toBe(outcomes(context));
      expect(outcomes(variant)).toEqual(
        abstractOutcomes({ ...state, context: variant }, graph.model, { ...graph.outcomeOptions }),
      );
    }
  }, 60_000);

  it('is one list of evaluation outcomes for states that read the same, and another for each value read', () => {
    const graph = graphOf(incidentLoop, 6);
    const state = graph.states.find((candidate) => getPendingEffect(candidate).kind === 'evaluate');
    if (state === undefined) throw new Error('no state evaluates');
    const outcomes = (context: typeof state.context) =>
      abstractOutcomes({ ...state, context }, graph.model, graph.outcomeOptions);
    const { context } = state;
    const { progress } = context;
    expect(outcomes({ ...context })).toBe(outcomes(context));
    expect(outcomes({ ...context, steps: context.steps + 1 })).toBe(outcomes(context));
    const variants = [
      { ...context, lastEventAt: context.lastEventAt + 1 },
      { ...context, startedAt: null },
      { ...context, taskIndex: context.taskIndex + 1 },
      { ...context, transport: { ...context.transport, retries: context.transport.retries + 1 } },
      { ...context, progress: { ...progress, unchangedStateStreak: progress.unchangedStateStreak > 1 ? 0 : 2 } },
      { ...context, progress: { ...progress, lastOutputDigest: 'output-x' } },
      { ...context, progress: { ...progress, lastEvaluatorReason: 'reason-x' } },
      // Two texts that would join alike without the reason's length.
      { ...context, progress: { ...progress, lastEvaluatorReason: 'r|=d', lastOutputDigest: null } },
      { ...context, progress: { ...progress, lastEvaluatorReason: 'r', lastOutputDigest: 'd|-' } },
    ];
    const lists = new Set([outcomes(context)]);
    for (const variant of variants) {
      expect(outcomes(variant)).not.toBe(outcomes(context));
      expect(outcomes(variant)).toEqual(
        abstractOutcomes({ ...state, context: variant }, graph.model, { ...graph.outcomeOptions }),
      );
      lists.add(outcomes(variant));
    }
    expect(lists.size).toBe(variants.length + 1);
  }, 60_000);

  it('is another list of evaluation outcomes once the spend budget leaves no model call for a judge', () => {
    const judgeLoop = createLoop({
      model: scriptedModel([reply('x')]),
      evaluate: [
        evaluators.schema(z.object({ answer: z.string() })),
        evaluators.judge({ model: scriptedModel([reply('{"passed": true, "reason": "ok"}')]), criteria: 'kind' }),
      ],
      limits: { maxSteps: 3, maxOutputTokens: 1_000 },
    });
    const graph = graphOf(judgeLoop, 3);
    const state = graph.states.find((candidate) => {
      const effect = getPendingEffect(candidate);
      return effect.kind === 'evaluate' && effect.mayCallModel;
    });
    if (state === undefined) throw new Error('no state evaluates with a judge it may call');
    const outcomes = (context: typeof state.context) =>
      abstractOutcomes({ ...state, context }, graph.model, graph.outcomeOptions);
    const { context } = state;
    const spent = { ...context, usage: { ...context.usage, outputTokens: 1_000 } };
    const effect = getPendingEffect({ ...state, context: spent });
    expect(effect.kind === 'evaluate' && effect.mayCallModel).toBe(false);
    expect(outcomes(spent)).not.toBe(outcomes(context));
    expect(outcomes(spent)).toEqual(
      abstractOutcomes({ ...state, context: spent }, graph.model, { ...graph.outcomeOptions }),
    );
    expect(outcomes(spent)).not.toEqual(outcomes(context));
  }, 60_000);
});
