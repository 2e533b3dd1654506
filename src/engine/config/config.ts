/**
 * `createLoop` config: validated with zod before anything runs. Bad config throws
 * `LoopConfigError` naming each bad field's path and what was expected.
 */
import type { z } from 'zod';
import {
  DEFAULT_BACKOFF,
  DEFAULT_CONTEXT,
  DEFAULT_DURABLE,
  DEFAULT_LIMITS,
  DEFAULT_LOOP_NAME,
  DEFAULT_NO_PROGRESS,
  DEFAULT_PRICES,
} from '../constants.js';
import type { ModelPrice } from '../../contracts/model.js';
import type { ContextOptions, ResolvedContextOptions } from '../../contracts/context-options.js';
import { LoopConfigError, type ConfigIssue } from '../../contracts/errors.js';
import { configSchema } from './config-schema.js';
import { parseInput } from './parse-input.js';
import type { KeepByReference } from './snapshot-input.js';

export { validateRunInput, type RunInput } from './run-input.js';
import { transportAttemptsOf, transportAttemptsWarning } from './transport-limits.js';
import { validateEvaluators, type EvaluateOption, type Evaluator } from '../evaluators/index.js';
import { systemClock, type Clock } from '../runtime/clock.js';
import { priceOf } from '../pricing/pricing.js';
import type { BackoffOptions } from '../runtime/retry-policy.js';
import type { LoopLimits, NoProgressThresholds, TaskFailurePolicy } from '../../../machines/types.js';
import type { Model } from '../../contracts/model.js';
import { defaultRunId } from '../hooks/run-id.js';
import { createRedactor, type RedactOptions, type Redactor } from '../redaction/redact.js';
import type { Store } from '../../contracts/store.js';
import type { Tool, ToolHealth, ToolPolicy } from '../tools/index.js';
import type { OtelTraceOptions, TraceOptions } from '../trace/trace-event.js';
import type { ResolvedTraceOptions } from '../trace/trace-sinks.js';
import type { InspectOption } from '../runtime/inspect-option.js';
import { resolveLearning, type LearningOptions, type ResolvedLearning } from '../learning/learning-options.js';
import type { TaskFeedback } from '../learning/learning-math.js';

/**
 * What a task prompt may be built from: the run's goal, the outputs of the tasks before it and, with
 * `learning`, what went wrong in the task's earlier runs.
 * @example
 * const prompt = ({ goal, outputs }: TaskPromptContext) => `${goal}: format ${JSON.stringify(outputs.draft)}`;
 */
export interface TaskPromptContext {
  goal: string;
  outputs: Readonly<Record<string, unknown>>;
  /** With `learning`: the task's pass rate and most frequent failure reasons across earlier runs; undefined without. */
  feedback?: TaskFeedback;
}

/**
 * One node of a workflow: a bounded agent loop with its own evaluators and retry counters.
 * @example
 * const draft: TaskConfig = { id: 'draft', prompt: 'Write the draft as JSON', evaluate: [evaluators.json()], onFailure: 'continue' };
 */
export interface TaskConfig<Evaluate extends EvaluateOption = EvaluateOption> {
  id: string;
  prompt: string | ((context: TaskPromptContext) => string);
  /** This task's evaluator or evaluators; defaults to the loop's `evaluate`. */
  evaluate?: Evaluate;
  /** Tools the task cannot do without: if one becomes unavailable the run stops with `tool_unavailable`. */
  requires?: readonly string[];
  /** `stop` (default) ends the run when the task fails for good; `continue` records a warning and goes on. */
  onFailure?: TaskFailurePolicy;
}

/**
 * Everything `createLoop` accepts; only `model` is required. Validated before anything runs. Any field
 * (at any depth) set to `undefined` means "use the default", exactly as if it were left out. The
 * type parameters are inferred by `createLoop` to type `result.output`; leave them out elsewhere.
 * @example
 * const config: LoopConfig = { model, tools: [getOrderStatus], limits: { maxSteps: 4, maxCostUsd: 0.05 } };
 */
export interface LoopConfig<
  Evaluate extends EvaluateOption = EvaluateOption,
  Tasks extends readonly TaskConfig[] = readonly TaskConfig[],
> {
  model: Model;
  /**
   * The loop's name (default `loopstate`): OpenTelemetry's `gen_ai.agent.name` on the run span, and
   * `loop.name`. Trimmed; 1 to 128 characters, no control characters.
   */
  name?: string;
  instructions?: string;
  tools?: readonly Tool[];
  /** One evaluator or a list, run in order on the final reply (`evaluators.chain` types each step). */
  evaluate?: Evaluate;
  tasks?: Tasks;
  /**
   * Budgets, merged over `DEFAULT_LIMITS`. A field left out or set to `undefined` keeps its default; it
   * never switches the budget off. To switch one off say so: `Infinity` is accepted by `maxCostUsd`,
   * `maxInputTokens`, `maxOutputTokens`, `maxToolCalls`, `maxTransportRetries` (the default) and `deadlineMs`
   * (no deadline timer is armed). Counts such as `maxSteps` and `maxTransportAttempts` stay finite; NaN is
   * refused everywhere.
   */
  limits?: Partial<LoopLimits>;
  /** No-progress thresholds, merged over `DEFAULT_NO_PROGRESS`; `undefined` keeps the default. */
  noProgress?: Partial<NoProgressThresholds>;
  /** Keeps each request under a per-call input ceiling by trimming or summarizing older turns. */
  context?: ContextOptions;
  policy?: ToolPolicy;
  /**
   * Offer the built-in `update_plan` tool: the model keeps a list of items with statuses, and
   * `noProgress.planStall` decisions without an item done or removed nudge it, then stop the run.
   */
  plan?: boolean;
  /** USD per million tokens by model id, merged over the defaults. */
  prices?: Readonly<Record<string, ModelPrice>>;
  trace?: TraceOptions | false;
  /** Extra key names and value patterns to redact from traces, details, warnings and errors; the built-in rules always apply. */
  redact?: RedactOptions;
  retry?: Partial<BackoffOptions>;
  /** Injected time source; tests pass a virtual clock. */
  clock?: Clock;
  /** Injected [0, 1) source for backoff jitter; tests pass a seeded one. */
  random?: () => number;
  /** Run id generator when `run()` is not given one; a throw or a non-string ends that run as `fatal_error`. */
  generateRunId?: () => string;
  /**
   * Tool health (circuit breakers) shared by every run of this loop, and by other loops given the same
   * object. Leave it out and each `run()` gets a fresh one, so one run's failures never withhold a tool
   * from another (one tenant's errors must not stop another tenant's run).
   */
  toolHealth?: ToolHealth;
  /**
   * The order tools are offered to the model in: `declared` (default, as listed in `tools`) or
   * `success_rate` (by the tool health's weight, highest first, so a flaky tool moves down the list;
   * ties keep the declared order). Every tool round records the health and the order in a `tool-health` trace event.
   */
  toolOrder?: ToolOrder;
  /**
   * An XState inspection observer that sees every event and snapshot of the loop's actor, e.g.
   * `statelyInspector({ url })`. Off by default. A throwing observer never breaks a run: the first
   * throw becomes a warning. It sees the machine's context (counters, digests, evaluator reasons,
   * stop details), never messages or tool results.
   */
  inspect?: InspectOption;
  /**
   * Makes runs durable: each step is journalled before the machine sees it, so `loop.resume(runId)` can
   * continue a run after a crash or a stop for approval, in another process if need be.
   */
  store?: Store;
  /** How a durable run journals (only with `store`). */
  durable?: DurableOptions;
  /**
   * A budget shared by every run of this tenant, kept in the store's ledger: each run holds its share
   * (the lesser of its own limit and what the tenant has left) when it starts and gives back what it did
   * not spend when it finishes. Needs a `store`.
   */
  tenant?: TenantBudget;
  /**
   * Learning across runs, off unless given (`learning: {}` takes the defaults): tool health (weights for
   * `toolOrder: 'success_rate'`, failure streaks for the circuit breaker) and each task's pass rate and
   * frequent failure reasons (`prompt({ goal, feedback })`), kept in the `store` per loop `name` and
   * `tenant`, shared by every process on it. Needs a `store`; not together with `toolHealth`.
   */
  learning?: LearningOptions;
}

/**
 * A tenant's shared budget; a dimension left out is not capped for the tenant.
 * @example
 * createLoop({ model, store: sqliteStore({ path: 'loops.db' }), tenant: { id: 'acme', maxCostUsd: 25 }, limits: { maxCostUsd: 0.5 } });
 */
export interface TenantBudget {
  id: string;
  maxCostUsd?: number;
  maxInputTokens?: number;
  maxOutputTokens?: number;
}

/**
 * Options of durable runs, merged over `DEFAULT_DURABLE`.
 * @example
 * createLoop({ model, store: sqliteStore({ path: 'loops.db' }), durable: { approvalExpiresAfterMs: 86_400_000 } });
 */
export interface DurableOptions {
  /**
   * A snapshot of the whole run at least this many events apart (default 32), and never before the journal
   * since the last one is as large as that snapshot, so snapshots of a long run never cost more per step
   * than the journal; a resume re-applies the events after the latest snapshot. While a model call is out, the
   * commit made meanwhile takes one once a quarter of this many events passed: a crash in that wait re-applies none.
   */
  snapshotEvery?: number;
  /** A pending approval expires this long after the run stopped for it (default: never). */
  approvalExpiresAfterMs?: number;
  /** How long a process holds a run without writing before another may take it over (default 30 000 ms). */
  leaseMs?: number;
  /**
   * At most this many model calls of steps whose tool calls are all idempotent are left uncommitted
   * (default 16; a failed call counts too): their commits are grouped into one, made before the model call
   * after them (or when the run is found paused or cancelled), so a crash asks
   * the model again at most this many times (and runs those steps' idempotent calls again under the same
   * keys). 1 (or 0) commits before every model call. Nothing else waits: a write's intent and outcome, an
   * approval, an evaluation, a backoff and the run's stop are committed as always.
   */
  maxUncommittedSteps?: number;
  /**
   * Commits are grouped only while the last one is younger than this (default 20 ms): a run whose model
   * calls take longer than that commits before every one. 0 commits before every model call. A grouped step
   * takes the pause and cancel flags its group's commit found: one set elsewhere is seen within this time.
   */
  maxUncommittedMs?: number;
}

/**
 * How offered tools are ordered: as declared, or by success-rate weight.
 * @example
 * createLoop({ model, tools, toolOrder: 'success_rate' });
 */
export type ToolOrder = 'declared' | 'success_rate';

export interface ResolvedConfig {
  model: Model;
  name: string;
  instructions: string;
  tools: ReadonlyMap<string, Tool>;
  evaluate: readonly Evaluator[];
  tasks: readonly TaskConfig[] | null;
  limits: LoopLimits;
  noProgress: NoProgressThresholds;
  context: ResolvedContextOptions;
  policy: ToolPolicy | undefined;
  plan: boolean;
  prices: Readonly<Record<string, ModelPrice>>;
  trace: ResolvedTraceOptions;
  /** Compiled once per loop from the built-in rules and `redact`. */
  redact: Redactor;
  backoff: BackoffOptions;
  clock: Clock;
  random: () => number;
  generateRunId: () => string;
  /** The shared health object when one was passed in; otherwise undefined and each run makes its own. */
  toolHealth: ToolHealth | undefined;
  toolOrder: ToolOrder;
  store: Store | undefined;
  tenant: TenantBudget | undefined;
  durable: {
    snapshotEvery: number;
    approvalExpiresAfterMs: number | null;
    leaseMs: number;
    maxUncommittedSteps: number;
    maxUncommittedMs: number;
  };
  inspect: InspectOption | undefined;
  /** Learning across runs, with its defaults; undefined when off. */
  learning: ResolvedLearning | undefined;
  /** Options whose meaning changed, said once on each run's warnings. */
  deprecations: readonly string[];
}

/** Evaluator lists are checked by their own module; its paths are relative to the list. */
function evaluatorIssues(config: z.infer<typeof configSchema>): ConfigIssue[] {
  const lists: [string, readonly Evaluator[] | undefined][] = [
    ['evaluate', config.evaluate],
    ...(config.tasks ?? []).map((task, index): [string, readonly Evaluator[] | undefined] => [
      `tasks[${index}].evaluate`,
      task.evaluate,
    ]),
  ];
  return lists.flatMap(([prefix, list]) =>
    validateEvaluators(list ?? []).map((issue) => ({ path: `${prefix}${issue.path}`, message: issue.message })),
  );
}

/**
 * Bounds that scale with the run's: without a per-task bound a task may use every step the run has, and
 * without a tool-call budget every step may take a full reply of calls (so raising maxSteps never stops a
 * loop early on a budget it did not set).
 */
export function resolveLimits(limits: Partial<LoopLimits> | undefined): LoopLimits {
  const merged = { ...DEFAULT_LIMITS, ...limits };
  return {
    ...merged,
    maxStepsPerTask: limits?.maxStepsPerTask ?? merged.maxSteps,
    maxToolCalls: limits?.maxToolCalls ?? merged.maxSteps * merged.maxToolCallsPerReply,
    maxTransportAttempts: transportAttemptsOf(limits),
  };
}

/** Trace options with their defaults: in memory, OpenTelemetry through the global tracer, no file, no prompts. */
function resolveTrace(trace: z.infer<typeof configSchema>['trace']): ResolvedTraceOptions {
  if (trace === false) return { inMemory: false, onEvent: undefined, file: undefined, prompts: false, otel: false };
  return {
    inMemory: trace?.inMemory ?? true,
    onEvent: trace?.onEvent as ResolvedTraceOptions['onEvent'],
    file: trace?.file,
    prompts: trace?.prompts ?? false,
    otel: trace?.otel === false ? false : ((trace?.otel ?? {}) as OtelTraceOptions),
  };
}

/** Objects the loop calls into (model, clock, shared health, tools, evaluators) are kept as they are; the rest is copied as plain data. */
const keepConfigValue: KeepByReference = (path) => {
  const [last, parent] = [path.at(-1), path.at(-2)];
  if (
    path.length === 1 &&
    (last === 'model' || last === 'clock' || last === 'toolHealth' || last === 'store' || last === 'inspect')
  )
    return true;
  // An OpenTelemetry tracer and context are the caller's objects, used as they are.
  if (
    path.length === 3 &&
    path[0] === 'trace' &&
    parent === 'otel' &&
    (last === 'tracer' || last === 'parent' || last === 'meterProvider')
  )
    return true;
  // An evaluator may also be given alone, not in a list.
  return last === 'evaluate' || (typeof last === 'number' && (parent === 'tools' || parent === 'evaluate'));
};

/**
 * A cost budget set on purpose must be able to see the spend: a model without a price would count as
 * $0 against it. Left at its default, the budget only warns (local models have no price).
 */
function unpricedBudgetIssues(
  config: z.infer<typeof configSchema>,
  prices: Readonly<Record<string, ModelPrice>>,
): ConfigIssue[] {
  const budget = config.limits?.maxCostUsd;
  if (budget === undefined || !Number.isFinite(budget) || priceOf(prices, config.model.id) !== undefined) return [];
  return [
    {
      path: 'limits.maxCostUsd',
      message: `the model "${config.model.id}" has no price, so its spend would count as $0 against this budget; add it to \`prices\` (USD per million tokens) or set maxCostUsd: Infinity`,
    },
  ];
}

/** Every secret value the tools carry (an MCP server's token), for the loop's redactor. */
function secretsOfTools(tools: readonly Tool[] | undefined): string[] {
  return (tools ?? []).flatMap((tool) => tool.secrets ?? []);
}

/**
 * The loop reads its tools per run: when the `tools` array it was given has changed in place since (an
 * MCP connection's `tools`, on the server's `tools/list_changed`), the config is validated again and the
 * new tools (and their secrets) are taken by `resolved`, for runs that start from now on. A run in
 * flight keeps the tools it started with. Throws `LoopConfigError` when the changed list is invalid.
 */
export function refreshTools(resolved: ResolvedConfig, input: { tools?: readonly Tool[] | undefined }): void {
  const given = input.tools ?? [];
  const current = [...resolved.tools.values()];
  if (given.length === current.length && given.every((tool, index) => tool === current[index])) return;
  const next = resolveConfig(input);
  resolved.tools = next.tools;
  resolved.redact = next.redact;
}

export function resolveConfig(input: unknown): ResolvedConfig {
  const config = parseInput(configSchema, input, keepConfigValue, 'config');
  const prices = { ...DEFAULT_PRICES, ...config.prices };
  const issues = [...evaluatorIssues(config), ...unpricedBudgetIssues(config, prices)];
  if (issues.length > 0) throw new LoopConfigError({ issues });
  return {
    model: config.model,
    name: config.name ?? DEFAULT_LOOP_NAME,
    instructions: config.instructions ?? '',
    tools: new Map((config.tools ?? []).map((tool) => [tool.name, tool])),
    evaluate: config.evaluate ?? [],
    tasks: (config.tasks as TaskConfig[] | undefined) ?? null,
    limits: resolveLimits(config.limits),
    noProgress: { ...DEFAULT_NO_PROGRESS, ...config.noProgress },
    context: {
      maxInputTokensPerCall:
        config.context?.maxInputTokensPerCall ??
        config.model.contextWindowTokens ??
        DEFAULT_CONTEXT.maxInputTokensPerCall,
      strategy: config.context?.strategy ?? DEFAULT_CONTEXT.strategy,
      keepTurns: config.context?.keepTurns ?? DEFAULT_CONTEXT.keepTurns,
    },
    policy: config.policy as ToolPolicy | undefined,
    plan: config.plan ?? false,
    prices,
    trace: resolveTrace(config.trace),
    redact: createRedactor(config.redact, secretsOfTools(config.tools)),
    backoff: { ...DEFAULT_BACKOFF, ...config.retry },
    clock: config.clock ?? systemClock,
    random: (config.random as (() => number) | undefined) ?? Math.random,
    generateRunId: (config.generateRunId as (() => string) | undefined) ?? defaultRunId,
    toolHealth: config.toolHealth,
    toolOrder: config.toolOrder ?? 'declared',
    store: config.store,
    tenant: config.tenant,
    durable: {
      snapshotEvery: config.durable?.snapshotEvery ?? DEFAULT_DURABLE.snapshotEvery,
      approvalExpiresAfterMs: config.durable?.approvalExpiresAfterMs ?? DEFAULT_DURABLE.approvalExpiresAfterMs,
      leaseMs: config.durable?.leaseMs ?? DEFAULT_DURABLE.leaseMs,
      maxUncommittedSteps: config.durable?.maxUncommittedSteps ?? DEFAULT_DURABLE.maxUncommittedSteps,
      maxUncommittedMs: config.durable?.maxUncommittedMs ?? DEFAULT_DURABLE.maxUncommittedMs,
    },
    inspect: config.inspect,
    learning: config.learning === undefined ? undefined : resolveLearning(config.learning),
    deprecations: [transportAttemptsWarning(config.limits)].filter((warning) => warning !== null),
  };
}
