/** The `evaluate` effect: run the task's evaluators on the last reply. */
import type { CallUsage, LoopContext, LoopEvent } from '../../../machines/types.js';
import { isSpendBudgetExhausted } from '../../../guards/budget.js';
import { isModelCallError, LoopstateError, ModelCallError, retryableModelError } from '../../contracts/errors.js';
import { safeNow } from '../hooks/guarded-clock.js';
import { describeThrown, toError } from '../redaction/describe-thrown.js';
import { callWithTimeout, type CallScope } from './call-timeout.js';
import { withSignal } from './signal-property.js';
import { reflectionNote } from '../prompts.js';
import { MESSAGE_OVERHEAD_CHARS } from './transcript.js';
import {
  evaluatorList,
  JudgeVerdictError,
  type EvaluationInput,
  type EvaluationResult,
  type Evaluator,
} from '../evaluators/index.js';
import { modelUsageSchema, shapeProblems } from '../../contracts/model-response-schema.js';
import type { ModelUsage } from '../../contracts/model.js';
import { CHARS_PER_TOKEN_ESTIMATE } from '../constants.js';
import { interruptionEvent } from './interruption.js';
import { runEvaluatorsUnder } from '../evaluators/run-evaluators.js';
import { pricedTotal } from '../pricing/pricing.js';
import { describeRefusal, nextTransportAttempt } from './transport-retry.js';
import { failureLabel } from '../../../actions/stop-detail.js';
import { outputHash } from '../output/output-hash.js';
import type { RunSession } from './run-session.js';

/** A judge's request besides the output it grades: its instructions and criteria, roughly. */
const JUDGE_REQUEST_OVERHEAD_TOKENS = 300;
/** The error code of an evaluator that took longer than `limits.evaluatorTimeoutMs`. */
const EVALUATOR_TIMEOUT = 'evaluator_timeout';

/** What the judges of one evaluation spent, kept even when one of them ends the run. */
class JudgeSpending {
  modelCalls = 0;
  transportRetries = 0;
  readonly byModel = new Map<string, ModelUsage>();

  add(modelId: string, usage: ModelUsage): void {
    const previous = this.byModel.get(modelId) ?? { inputTokens: 0, outputTokens: 0 };
    this.byModel.set(modelId, {
      inputTokens: previous.inputTokens + usage.inputTokens,
      outputTokens: previous.outputTokens + usage.outputTokens,
    });
  }
}

/**
 * Runs the task's evaluators. Before each LLM judge the token and cost budgets are checked with
 * what the judges before it spent: a judge the budget cannot pay for is not called, and output
 * that would need it fails for want of it, so the run stops at the budget gate instead of
 * completing unjudged. A judge's transient transport errors are retried with the loop's backoff: each
 * judge call has `maxTransportAttempts` of its own, and its retries count against the run's
 * `maxTransportRetries`; its other errors, a call out of attempts, and a reply that is no verdict, end
 * the run with `fatal_error` — never a reflection of the main model. Every other evaluator has
 * `limits.evaluatorTimeoutMs` to settle: one that takes longer is not a verdict on the output either,
 * so it ends the run with `fatal_error` (code `evaluator_timeout`) instead of making the model rewrite
 * an answer nobody judged.
 */
export async function performEvaluation(
  session: RunSession,
  context: LoopContext,
  mayCallModel: boolean,
): Promise<LoopEvent> {
  const { config } = session;
  const task = session.task;
  const output = session.lastReply ?? '';
  const spending = new JudgeSpending();
  const list = (task.evaluate === undefined ? config.evaluate : evaluatorList(task.evaluate)).map((evaluator) =>
    counted(session, context, evaluator, spending),
  );
  // A judge the budget cannot pay for is the next spend this evaluation needs: its estimate becomes the next request's.
  let unpaidJudgeTokens = 0;
  let summary;
  try {
    summary = await session.aborts.race(
      runEvaluatorsUnder(
        list,
        {
          output,
          taskId: task.id,
          rethrow: isJudgeFailure,
          mayRunJudge: (judge, spent) => {
            const judgeTokens = judgeRequestTokens(output);
            if (mayCallModel && canPayForJudge(session, context, spent, judgeTokens)) return null;
            unpaidJudgeTokens = judgeTokens;
            return `the LLM judge "${judge.name}" was not run: the token or cost budget is spent`;
          },
        },
        session.aborts,
      ),
    );
  } catch (error) {
    const at = safeNow(config.clock);
    // Judges that answered, or were cut short, were called all the same: their spend is counted whatever ends the run.
    if (session.aborts.aborted)
      return { ...interruptionEvent(session.aborts, at, spending.modelCalls), ...spentSoFar(session, spending) };
    session.recordFatalError(toError(error));
    return {
      type: 'run.faulted',
      at,
      message: config.redact.text(describeThrown(error)),
      ...spentSoFar(session, spending),
    };
  }
  const at = config.clock.now();
  for (const [modelId, usage] of Object.entries(summary.usageByModel)) {
    // A custom evaluator's usage is counted against the budgets, so it must be token counts.
    const problems = shapeProblems(modelUsageSchema, usage);
    if (problems !== null) throw new Error(`evaluator usage for model "${modelId}" is malformed: ${problems}`);
    session.warnIfUnpriced(modelId, at);
  }
  const judgeUsage = pricedTotal(config.prices, Object.entries(summary.usageByModel));
  const judged = judgeUsage.inputTokens + judgeUsage.outputTokens > 0;
  const review =
    summary.review === null
      ? undefined
      : {
          output: summary.parsed,
          evaluator: summary.review.evaluator,
          reason: summary.review.reason,
          outputHash: outputHash(output),
        };
  session.recordEvaluation(summary, review);
  session.record({
    type: 'evaluation-end',
    runId: session.runId,
    at,
    taskId: task.id,
    step: context.steps,
    passed: summary.passed,
    reason: summary.reason,
    evaluator: summary.failedEvaluator,
    usage: judged ? judgeUsage : null,
    modelCalls: spending.modelCalls,
  });
  if (review !== undefined)
    session.record({
      type: 'review-requested',
      runId: session.runId,
      at,
      taskId: task.id,
      step: context.steps,
      evaluator: review.evaluator,
      reason: review.reason,
      outputHash: review.outputHash,
    });
  return {
    type: 'evaluation.completed',
    at,
    passed: summary.passed,
    reason: summary.reason,
    ...(review === undefined ? {} : { needsReview: true }),
    outputDigest: session.progress.digest(output),
    usage: judged ? judgeUsage : null,
    modelCalls: spending.modelCalls,
    transportRetries: spending.transportRetries,
    nextRequestTokens: Math.max(
      nextRequestEstimate(session, summary.passed, summary.reason),
      summary.passed ? 0 : unpaidJudgeTokens,
    ),
  };
}

/** Counts each call an evaluator makes, and retries a judge's transient transport errors in place. */
function counted(session: RunSession, context: LoopContext, evaluator: Evaluator, spending: JudgeSpending): Evaluator {
  const { config } = session;
  return {
    name: evaluator.name,
    kind: evaluator.kind,
    // Each sample is one call of `evaluate` below: counted, timed out and retried on its own.
    ...(evaluator.samples === undefined ? {} : { samples: evaluator.samples }),
    ...(evaluator.combine === undefined ? {} : { combine: evaluator.combine.bind(evaluator) }),
    evaluate: async (input) => {
      // Failed attempts of this call in a row: each evaluator call has its own transport attempts.
      let failures = 0;
      for (;;) {
        if (evaluator.kind === 'judge') spending.modelCalls++;
        let result: EvaluationResult;
        try {
          // A judge's call has its own timeout, like the main model's.
          result =
            evaluator.kind === 'judge'
              ? await callWithTimeout(
                  session,
                  context.limits.modelCallTimeoutMs,
                  `LLM judge "${evaluator.name}"`,
                  (scope) => evaluator.evaluate(withCallSignal(input, scope)),
                )
              : await evaluateWithin(session, evaluator, input);
        } catch (error) {
          if (error instanceof JudgeVerdictError && error.usage) spending.add(error.modelId ?? 'unknown', error.usage);
          // Whatever else a judge throws is not a verdict on the output: never reflected to the main model.
          if (evaluator.kind === 'judge' && !isJudgeFailure(error) && !session.aborts.aborted) {
            throw new LoopstateError({
              code: 'judge_failed',
              message: `LLM judge "${evaluator.name}" failed: ${describeThrown(error)}`,
              cause: error,
            });
          }
          const transient = retryableModelError(error);
          if (transient === null || session.aborts.aborted) throw error;
          failures++;
          const call = `LLM judge "${evaluator.name}"`;
          const next = nextTransportAttempt({
            call,
            context,
            failures,
            retriesSoFar: spending.transportRetries,
            retryAfterMs: transient.retryAfterMs,
            backoff: config.backoff,
            random: config.random,
          });
          const label = failureLabel(transient.status, transient.kind);
          if (!('delayMs' in next)) {
            throw new ModelCallError({
              kind: transient.kind,
              message: describeRefusal(next.refusal, label, transient.message),
              cause: error,
              ...(transient.status === undefined ? {} : { status: transient.status }),
            });
          }
          spending.transportRetries++;
          session.warn(
            `task ${session.task.id}: ${call} transport error (${label}: ${transient.message}); retry ${failures} of this call in ${next.delayMs} ms`,
            config.clock.now(),
          );
          await session.aborts.race(config.clock.sleep(next.delayMs, session.signal));
          continue;
        }
        if (result?.usage) {
          if (evaluator.kind !== 'judge') spending.modelCalls++;
          spending.add(result.modelId ?? 'unknown', result.usage);
        }
        return result;
      }
    },
  };
}

/**
 * The evaluator's input with its call's own signal, made if it reads it. Field by field, not spread: a spread
 * would read the input's `signal`, the run's, which a run makes only when something asks for it.
 */
function withCallSignal(input: EvaluationInput, scope: CallScope): EvaluationInput {
  const own = { output: input.output, parsed: input.parsed, taskId: input.taskId };
  return withSignal(own, scope);
}

/**
 * A format, rule or custom evaluator, bounded by `limits.evaluatorTimeoutMs` of the loop's own config (a
 * run resumed from a snapshot taken before the limit existed has it too); its signal aborts on the timeout.
 */
function evaluateWithin(
  session: RunSession,
  evaluator: Evaluator,
  input: Parameters<Evaluator['evaluate']>[0],
): Promise<EvaluationResult> {
  const timeoutMs = session.config.limits.evaluatorTimeoutMs;
  return callWithTimeout(
    session,
    timeoutMs,
    `evaluator "${evaluator.name}"`,
    (scope) => evaluator.evaluate(withCallSignal(input, scope)),
    () =>
      new LoopstateError({
        code: EVALUATOR_TIMEOUT,
        message: `evaluator "${evaluator.name}" did not settle within limits.evaluatorTimeoutMs (${timeoutMs} ms); make it settle sooner or raise limits.evaluatorTimeoutMs`,
      }),
  );
}

/** The judges' spend so far, priced, for a fault event. */
function spentSoFar(session: RunSession, spending: JudgeSpending): { usage?: CallUsage; modelCalls: number } {
  const usage = pricedTotal(session.config.prices, spending.byModel);
  return usage.inputTokens + usage.outputTokens > 0
    ? { usage, modelCalls: spending.modelCalls }
    : { modelCalls: spending.modelCalls };
}

/**
 * A judge's call, its error or its failure to give a verdict, or an evaluator that never settled: the run's
 * to stop on, never a reason to reflect.
 */
function isJudgeFailure(error: unknown): boolean {
  return (
    isModelCallError(error) ||
    error instanceof JudgeVerdictError ||
    (error instanceof LoopstateError && (error.code === 'judge_failed' || error.code === EVALUATOR_TIMEOUT))
  );
}

/** A judge's request: the output it grades plus its instructions and criteria, roughly. */
function judgeRequestTokens(output: string): number {
  return Math.ceil(output.length / CHARS_PER_TOKEN_ESTIMATE) + JUDGE_REQUEST_OVERHEAD_TOKENS;
}

/**
 * The run's usage plus what judges spent in this evaluation leaves room for one more judge call, by the
 * very guard the machine stops on, so a judge refused here always ends the run with budget_exhausted.
 */
function canPayForJudge(
  session: RunSession,
  context: LoopContext,
  spent: Readonly<Record<string, ModelUsage>>,
  judgeTokens: number,
): boolean {
  const judges = pricedTotal(session.config.prices, Object.entries(spent));
  const usage = {
    ...context.usage,
    inputTokens: context.usage.inputTokens + judges.inputTokens,
    outputTokens: context.usage.outputTokens + judges.outputTokens,
    costUsd: context.usage.costUsd + judges.costUsd,
  };
  return !isSpendBudgetExhausted({ context: { ...context, usage, nextRequestTokens: judgeTokens } });
}

/**
 * The next request after this verdict: the next task's first request when the task passed (its
 * conversation is built now, so the budget gate checks the right size), else this task's with the
 * failure reason fed back.
 */
export function nextRequestEstimate(session: RunSession, passed: boolean, reason: string): number {
  // The reflection note the machine asks for, as one more message.
  if (!passed) return session.estimateNextRequest(reflectionNote(reason).length + MESSAGE_OVERHEAD_CHARS);
  const nextIndex = session.taskIndex + 1;
  return nextIndex < session.tasks.length ? session.prepareTask(nextIndex) : session.estimateNextRequest();
}
