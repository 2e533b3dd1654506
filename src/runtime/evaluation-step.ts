/** The `evaluate` effect: run the task's evaluators on the last reply (DESIGN §6). */
import type { LoopEvent } from '../../machines/types.js';
import { runEvaluators } from '../evaluators/index.js';
import { untilAborted } from './interruption.js';
import { costOf, priceOf } from './pricing.js';
import type { RunSession } from './run-session.js';

/**
 * Runs the task's evaluators. With the spend budgets gone (`mayCallModel` false) an LLM judge is
 * not paid for: the other evaluators still run, and output they pass is reported as failing for
 * want of the judge, so the run stops at the next budget gate instead of completing unjudged.
 */
export async function performEvaluation(session: RunSession, mayCallModel: boolean): Promise<LoopEvent> {
  const { config } = session;
  const task = session.task;
  const list = task.evaluate ?? config.evaluate;
  const affordable = mayCallModel ? list : list.filter((evaluator) => evaluator.kind !== 'judge');
  const evaluated = await untilAborted(
    runEvaluators(affordable, { output: session.lastReply ?? '', signal: session.signal, taskId: task.id }),
    session.signal,
  );
  const skippedJudge = list.find((evaluator) => !affordable.includes(evaluator));
  const summary =
    evaluated.passed && skippedJudge !== undefined
      ? { ...evaluated, passed: false, reason: `the LLM judge "${skippedJudge.name}" was not run: the token or cost budget is spent`, failedEvaluator: skippedJudge.name }
      : evaluated;
  const at = config.clock.now();
  let costUsd = 0;
  for (const [modelId, usage] of Object.entries(summary.usageByModel)) costUsd += costOf(priceOf(config.prices, modelId), usage);
  const judged = summary.usage.inputTokens + summary.usage.outputTokens > 0;
  if (summary.passed) session.taskOutputs[task.id] = summary.parsed;
  session.record({ type: 'evaluation-end', runId: session.runId, at, taskId: task.id, passed: summary.passed, reason: summary.reason, evaluator: summary.failedEvaluator });
  return {
    type: 'evaluation.completed', at, passed: summary.passed, reason: summary.reason,
    usage: judged ? { ...summary.usage, costUsd } : null,
    // A failure's reason is fed back in the next request.
    nextRequestTokens: session.transcript.estimateTokens(summary.passed ? 0 : summary.reason.length + 80),
  };
}
