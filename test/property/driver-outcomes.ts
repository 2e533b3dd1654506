/**
 * Outcomes the real driver can send that the abstract classes leave out because they carry usage the
 * exhaustive exploration keeps at zero: a fault right after a model call (the call's usage is kept), and an
 * LLM judge's usage on an evaluation (`src/engine/runtime/evaluation-step.ts` reports it, priced).
 */
import { getPendingEffect, type LoopSnapshot } from '../../machines/pending-effect.js';
import {
  ABSTRACT_TIME,
  EVALUATOR_REASONS,
  OUTCOME_TEXT,
  type AbstractOutcome,
  type ModelConfiguration,
} from '../model-based/abstract-events.js';

function withinDeadline(snapshot: LoopSnapshot): number {
  const { context } = snapshot;
  return Math.max(context.lastEventAt, (context.startedAt ?? ABSTRACT_TIME.startAt) + ABSTRACT_TIME.withinOffsetMs);
}

/** While the model is called: a fault after the call answered, with a light or a heavy call's usage. */
export function faultsAfterModelCall(config: ModelConfiguration, snapshot: LoopSnapshot): AbstractOutcome[] {
  if (getPendingEffect(snapshot).kind !== 'callModel') return [];
  const at = withinDeadline(snapshot);
  return [
    {
      label: 'run.faulted:after-model-call:light',
      event: { type: 'run.faulted', message: OUTCOME_TEXT.fault, usage: config.lightUsage, at },
    },
    {
      label: 'run.faulted:after-model-call:heavy-output',
      event: { type: 'run.faulted', message: OUTCOME_TEXT.fault, usage: config.heavyUsage.output, at },
    },
  ];
}

/**
 * While the output is evaluated: a judge ran and was paid a light call, whether it passed or failed the
 * output — but only when the effect allows a model call; otherwise the driver skips the judge and
 * reports the output as failing for want of it, with no usage.
 */
export function judgedEvaluations(config: ModelConfiguration, snapshot: LoopSnapshot): AbstractOutcome[] {
  const effect = getPendingEffect(snapshot);
  if (effect.kind !== 'evaluate') return [];
  const at = withinDeadline(snapshot);
  const nextRequestTokens = config.requestEstimate;
  // Each judged evaluation grades a new output; a skipped judge made no call.
  const judged = { outputDigest: `judged-at-step-${snapshot.context.steps}`, modelCalls: 1, transportRetries: 0 };
  if (!effect.mayCallModel) {
    const reason = 'the LLM judge "judge" was not run: the token or cost budget is spent';
    return [
      {
        label: 'evaluation.completed:judge-skipped',
        event: {
          type: 'evaluation.completed',
          passed: false,
          reason,
          usage: null,
          nextRequestTokens,
          at,
          ...judged,
          modelCalls: 0,
        },
      },
    ];
  }
  return [
    {
      label: 'evaluation.completed:pass:within:judged',
      event: {
        type: 'evaluation.completed',
        passed: true,
        reason: '',
        usage: config.lightUsage,
        nextRequestTokens,
        at,
        ...judged,
      },
    },
    {
      label: 'evaluation.completed:fail-A:within:judged',
      event: {
        type: 'evaluation.completed',
        passed: false,
        reason: EVALUATOR_REASONS[0],
        usage: config.lightUsage,
        nextRequestTokens,
        at,
        ...judged,
      },
    },
  ];
}
