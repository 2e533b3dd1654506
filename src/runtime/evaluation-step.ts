/** The `evaluate` effect: run the task's evaluators on the last reply (DESIGN §6). */
import type { LoopEvent } from '../../machines/types.js';
import { ModelCallError } from '../errors.js';
import { evaluatorList, runEvaluators, type EvaluationSummary, type Evaluator } from '../evaluators/index.js';
import { backoffDelay } from './retry-policy.js';
import { untilAborted } from './interruption.js';
import { modelUsageSchema, shapeProblems } from '../model/response-schema.js';
import { costOf, priceOf } from './pricing.js';

/** The words around a fed-back evaluator reason (see model-step's reflection message). */
const REFLECTION_FRAMING_CHARS = 80;
import type { RunSession } from './run-session.js';

/**
 * Runs the task's evaluators. With the spend budgets gone (`mayCallModel` false) an LLM judge is
 * not paid for: the other evaluators still run, and output they pass is reported as failing for
 * want of the judge, so the run stops at the next budget gate instead of completing unjudged.
 */
export async function performEvaluation(session: RunSession, mayCallModel: boolean): Promise<LoopEvent> {
  const { config } = session;
  const task = session.task;
  const list = task.evaluate === undefined ? config.evaluate : evaluatorList(task.evaluate);
  const affordable = mayCallModel ? list : list.filter((evaluator) => evaluator.kind !== 'judge');
  const evaluated = await evaluateWithTransportRetries(session, affordable);
  const skippedJudge = list.find((evaluator) => !affordable.includes(evaluator));
  const summary =
    evaluated.passed && skippedJudge !== undefined
      ? { ...evaluated, passed: false, reason: `the LLM judge "${skippedJudge.name}" was not run: the token or cost budget is spent`, failedEvaluator: skippedJudge.name }
      : evaluated;
  const at = config.clock.now();
  let costUsd = 0;
  for (const [modelId, usage] of Object.entries(summary.usageByModel)) {
    // A custom evaluator's usage is counted against the budgets, so it must be token counts.
    const problems = shapeProblems(modelUsageSchema, usage);
    if (problems !== null) throw new Error(`evaluator usage for model "${modelId}" is malformed: ${problems}`);
    session.warnIfUnpriced(modelId, at);
    costUsd += costOf(priceOf(config.prices, modelId), usage);
  }
  const judged = summary.usage.inputTokens + summary.usage.outputTokens > 0;
  if (summary.passed) session.taskOutputs[task.id] = summary.parsed;
  session.lastEvaluation = { taskIndex: session.taskIndex, reply: session.lastReply ?? '', formatted: summary.formatted };
  session.record({ type: 'evaluation-end', runId: session.runId, at, taskId: task.id, passed: summary.passed, reason: summary.reason, evaluator: summary.failedEvaluator });
  return {
    type: 'evaluation.completed', at, passed: summary.passed, reason: summary.reason,
    usage: judged ? { ...summary.usage, costUsd } : null,
    nextRequestTokens: nextRequestEstimate(session, summary.passed, summary.reason),
  };
}

/**
 * A judge's transient transport error (429, 5xx, timeout) is not a verdict on the output: it is
 * retried here with the loop's backoff, up to maxRetries, so the main model is not asked to
 * "fix" an answer nobody judged. Past that the run faults (fatal_error), naming the judge's error.
 */
async function evaluateWithTransportRetries(session: RunSession, list: readonly Evaluator[]): Promise<EvaluationSummary> {
  const { config } = session;
  const isTransient = (error: unknown) => error instanceof ModelCallError && error.retryable;
  for (let attempt = 0; ; attempt++) {
    try {
      return await untilAborted(
        runEvaluators(list, { output: session.lastReply ?? '', signal: session.signal, taskId: session.task.id, rethrow: isTransient }),
        session.signal,
      );
    } catch (error) {
      if (!(error instanceof ModelCallError) || !error.retryable || session.signal.aborted) throw error;
      if (attempt >= config.limits.maxRetries) throw new Error(`the LLM judge failed after ${attempt} transport retries: ${error.message}`, { cause: error });
      const delay = backoffDelay({ attempt, retryAfterMs: error.retryAfterMs, options: config.backoff, random: config.random });
      session.warn(`task ${session.task.id}: LLM judge transport error (${error.message}); retrying in ${delay} ms`, config.clock.now());
      await untilAborted(config.clock.sleep(delay, session.signal), session.signal);
    }
  }
}

/**
 * The next request after this verdict: the next task's first request when the task passed (its
 * conversation is built now, so the budget gate checks the right size), else this task's with the
 * failure reason fed back.
 */
function nextRequestEstimate(session: RunSession, passed: boolean, reason: string): number {
  if (!passed) return session.transcript.estimateTokens(reason.length + REFLECTION_FRAMING_CHARS);
  const nextIndex = session.taskIndex + 1;
  return nextIndex < session.tasks.length ? session.prepareTask(nextIndex) : session.transcript.estimateTokens();
}
