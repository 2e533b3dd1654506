/** The `evaluate` effect: run the task's evaluators on the last reply (DESIGN §6). */
import type { LoopEvent } from '../../machines/types.js';
import { runEvaluators } from '../evaluators/index.js';
import { untilAborted } from './interruption.js';
import { costOf, priceOf } from './pricing.js';
import type { RunSession } from './run-session.js';

export async function performEvaluation(session: RunSession): Promise<LoopEvent> {
  const { config } = session;
  const task = session.task;
  const summary = await untilAborted(
    runEvaluators(task.evaluate ?? config.evaluate, { output: session.lastReply ?? '', signal: session.signal, taskId: task.id }),
    session.signal,
  );
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
