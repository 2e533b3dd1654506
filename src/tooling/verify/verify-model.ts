/**
 * What `loopstate verify` needs to know about a loop, read off its resolved config: the machine's input
 * (limits, thresholds, the task plan), which outcomes its effects can have (tool verdicts under the policy,
 * judges per task, the plan tool, context summaries) and its model's price.
 */
import type { LoopInput, LoopLimits, TaskPlan } from '../../../machines/types.js';
import type { ResolvedConfig } from '../../internal.js';
import type { ModelPrice } from '../../index.js';
import { priceOf } from '../../internal.js';
import { checkToolPolicy, type PolicyVerdict } from '../../index.js';
import type { ToolAccess } from '../../index.js';

/** One tool as verify sees it: its access level and every verdict the policy can give it. */
export interface ToolFacts {
  name: string;
  access: ToolAccess;
  /** Running it twice is harmless: a timed-out call of it never has an unknown outcome. */
  idempotent: boolean;
  verdicts: readonly PolicyVerdict[];
}

export interface VerifyModel {
  input: LoopInput;
  modelId: string;
  /** The loop model's price; undefined when the price table has none (its spend counts as $0). */
  price: ModelPrice | undefined;
  tools: readonly ToolFacts[];
  /** LLM judge calls of one evaluation of each task (a judge with `samples` makes that many), by task index. */
  judgesPerTask: readonly number[];
  /** Whether an evaluator of the task may ask for a person's review (`evaluators.review`, a judge's `reviewOnSplit`). */
  reviewsPerTask: readonly boolean[];
  plan: boolean;
  /** Model calls one decision may make: 2 when the context may be condensed by a summary call first. */
  callsPerDecision: 1 | 2;
  /** `policy.decide` exists: its verdicts are unknown, so every one is possible. */
  hasPolicyHook: boolean;
  onDeny: 'stop' | 'tell_model';
}

const ALL_VERDICTS: readonly PolicyVerdict[] = ['allow', 'deny', 'needs_approval'];

function toolFacts(config: ResolvedConfig): ToolFacts[] {
  const policy = config.policy;
  const lists = policy === undefined ? undefined : { allow: policy.allow, requireApproval: policy.requireApproval };
  return [...config.tools.values()].map((tool) => ({
    name: tool.name,
    access: tool.access,
    idempotent: tool.idempotent,
    // The lists alone: a hook's verdict depends on the call's arguments, so any verdict is possible then.
    verdicts: policy?.decide === undefined ? [checkToolPolicy(lists, tool, undefined)] : ALL_VERDICTS,
  }));
}

/** The task plan the driver builds: one task named `main` without `tasks`. */
function taskPlans(config: ResolvedConfig): TaskPlan[] {
  if (config.tasks === null) return [{ id: 'main', onFailure: 'stop' }];
  return config.tasks.map((task) => ({ id: task.id, onFailure: task.onFailure ?? 'stop' }));
}

type EvaluatorFacts = { kind?: string; samples?: number; mayRequestReview?: boolean } | undefined;
const listOf = (evaluate: unknown): EvaluatorFacts[] =>
  (Array.isArray(evaluate) ? evaluate : [evaluate]) as EvaluatorFacts[];

export function verifyModelOf(config: ResolvedConfig, limits: LoopLimits = config.limits): VerifyModel {
  const evaluatorsOf = (index: number) => config.tasks?.[index]?.evaluate ?? config.evaluate;
  const tasks = taskPlans(config);
  return {
    input: { limits, noProgress: config.noProgress, tasks },
    modelId: config.model.id,
    price: priceOf(config.prices, config.model.id),
    tools: toolFacts(config),
    judgesPerTask: tasks.map((_task, index) =>
      listOf(evaluatorsOf(index))
        .filter((evaluator) => evaluator?.kind === 'judge')
        .reduce((calls, judge) => calls + (judge?.samples ?? 1), 0),
    ),
    reviewsPerTask: tasks.map((_task, index) =>
      listOf(evaluatorsOf(index)).some((evaluator) => evaluator?.mayRequestReview === true),
    ),
    plan: config.plan,
    callsPerDecision:
      config.context.strategy === 'summarize' && Number.isFinite(config.context.maxInputTokensPerCall) ? 2 : 1,
    hasPolicyHook: config.policy?.decide !== undefined,
    onDeny: config.policy?.onDeny ?? 'stop',
  };
}
