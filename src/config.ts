/**
 * `createLoop` config: validated with zod before anything runs. Bad config throws
 * `LoopConfigError` naming each bad field's path and what was expected.
 */
import { z } from 'zod';
import { DEFAULT_BACKOFF, DEFAULT_CONTEXT, DEFAULT_LIMITS, DEFAULT_NO_PROGRESS, DEFAULT_PRICES, type ModelPrice } from './constants.js';
import type { ContextOptions, ResolvedContextOptions } from './context/context-window.js';
import { LoopConfigError, type ConfigIssue } from './errors.js';
import { snapshotInput, type KeepByReference } from './config/snapshot-input.js';
import { validateEvaluators, type EvaluateOption, type Evaluator } from './evaluators/index.js';
import { systemClock, type Clock } from './runtime/clock.js';
import type { BackoffOptions } from './runtime/retry-policy.js';
import type { LoopLimits, NoProgressThresholds, TaskFailurePolicy } from '../machines/types.js';
import type { Message, Model } from './model/types.js';
import { checkMessages } from './conversation/prior-conversation.js';
import { PLAN_TOOL_NAME } from './plan/plan-tool.js';
import { createRedactor, type RedactOptions, type Redactor } from './redaction/redact.js';
import type { Tool, ToolHealth, ToolPolicy } from './tools/index.js';
import type { TraceEvent, TraceOptions } from './trace/trace-event.js';

/**
 * What a task prompt may be built from: the run's goal and the outputs of the tasks before it.
 * @example
 * const prompt = ({ goal, outputs }: TaskPromptContext) => `${goal}: format ${JSON.stringify(outputs.draft)}`;
 */
export interface TaskPromptContext {
  goal: string;
  outputs: Readonly<Record<string, unknown>>;
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
export interface LoopConfig<Evaluate extends EvaluateOption = EvaluateOption, Tasks extends readonly TaskConfig[] = readonly TaskConfig[]> {
  model: Model;
  instructions?: string;
  tools?: readonly Tool[];
  /** One evaluator or a list, run in order on the final reply (`evaluators.chain` types each step). */
  evaluate?: Evaluate;
  tasks?: Tasks;
  /**
   * Budgets, merged over `DEFAULT_LIMITS`. A field left out or set to `undefined` keeps its default; it
   * never switches the budget off. To switch one off say so: `Infinity` is accepted by `maxCostUsd`,
   * `maxInputTokens`, `maxOutputTokens`, `maxToolCalls` and `deadlineMs` (no deadline timer is armed).
   * Counts such as `maxSteps` stay finite; NaN is refused everywhere.
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
}

export interface ResolvedConfig {
  model: Model;
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
  trace: { inMemory: boolean; onEvent: ((event: TraceEvent) => void) | undefined };
  /** Compiled once per loop from the built-in rules and `redact`. */
  redact: Redactor;
  backoff: BackoffOptions;
  clock: Clock;
  random: () => number;
  generateRunId: () => string;
  /** The shared health object when one was passed in; otherwise undefined and each run makes its own. */
  toolHealth: ToolHealth | undefined;
}

const isFunction = (value: unknown): value is (...args: never[]) => unknown => typeof value === 'function';
const fn = (expected: string) => z.custom<(...args: never[]) => unknown>(isFunction, { message: `expected ${expected}` });
/** A number whose type error says NaN or Infinity plainly instead of "expected number, received NaN". */
const number = () =>
  z.number({
    error: (issue) =>
      issue.code !== 'invalid_type' || typeof issue.input !== 'number'
        ? undefined
        : Number.isNaN(issue.input)
          ? 'expected a number, got NaN'
          : `expected a finite number, got ${issue.input}`,
  });
const positiveInt = number().int().positive();
const MAX_TIMER_MS = 2_147_483_647;
const nonNegativeInt = number().int().min(0);

/** A budget that may be switched off explicitly with `Infinity`; any other value must pass `finite`. */
const finiteOrInfinity = (finite: z.ZodNumber) =>
  z.custom<number>((value) => value === Infinity || finite.safeParse(value).success, {
    error: (issue) => `${finite.safeParse(issue.input).error?.issues[0]?.message ?? 'invalid value'} (or Infinity for no limit)`,
  });

const modelSchema = z.custom<Model>(
  (value) => typeof value === 'object' && value !== null && typeof (value as Model).id === 'string' && isFunction((value as Model).generate),
  { message: 'expected a Model: an object with a string `id` and a `generate(request)` method (e.g. scriptedModel([...]))' },
);
const toolSchema = z.custom<Tool>(
  (value) => typeof value === 'object' && value !== null && typeof (value as Tool).name === 'string' && isFunction((value as Tool).execute) && typeof (value as Tool).spec === 'object',
  { message: 'expected a tool made with defineTool({...})' },
);
const evaluatorSchema = z.custom<Evaluator>(
  (value) => typeof value === 'object' && value !== null && typeof (value as Evaluator).name === 'string' && isFunction((value as Evaluator).evaluate),
  { message: 'expected an evaluator, e.g. evaluators.json() or evaluators.rule(...)' },
);
const isRegExp = (value: unknown): value is RegExp => Object.prototype.toString.call(value) === '[object RegExp]';
const redactSchema = z
  .object({
    keys: z.array(z.union([z.string().min(1, 'expected a non-empty key name'), z.custom<RegExp>(isRegExp)], { error: 'expected a key name (string) or a RegExp' })),
    patterns: z.array(
      z
        .custom<RegExp>(isRegExp, { message: 'expected a RegExp' })
        // A pattern that matches nothing at all would put a marker between every character.
        .refine((pattern) => !new RegExp(pattern.source, pattern.flags.replace(/[gy]/g, '')).test(''), { message: 'must not match the empty string' }),
    ),
  })
  .partial()
  .strict();
// One evaluator is a list of one; anything else must be a list, so bad input is named as such.
const evaluateSchema = z.preprocess(
  (value) => (typeof value === 'object' && value !== null && !Array.isArray(value) && evaluatorSchema.safeParse(value).success ? [value] : value),
  z.array(evaluatorSchema, { error: 'expected an evaluator or an array of evaluators' }),
);
const accessSchema = z.enum(['read', 'write', 'destructive']);

const limitsSchema = z
  .object({
    maxSteps: positiveInt,
    maxRetries: nonNegativeInt,
    // Node fires longer timers at once, which would end every run immediately.
    deadlineMs: finiteOrInfinity(positiveInt.max(MAX_TIMER_MS, `must be at most ${MAX_TIMER_MS} ms (about 24.8 days), the longest timer Node supports`)),
    maxInputTokens: finiteOrInfinity(positiveInt),
    maxOutputTokens: finiteOrInfinity(positiveInt),
    maxCostUsd: finiteOrInfinity(number().positive()),
    maxParallelTools: positiveInt,
    // Below this a truncation marker would not fit.
    maxToolResultBytes: number().int().min(128),
    maxArgumentRepairs: nonNegativeInt,
    maxStepsPerTask: positiveInt,
    modelCallTimeoutMs: positiveInt.max(MAX_TIMER_MS, `must be at most ${MAX_TIMER_MS} ms, the longest timer Node supports`),
    maxToolCalls: finiteOrInfinity(positiveInt),
    maxToolCallsPerReply: positiveInt,
  })
  .partial()
  .strict();

const noProgressSchema = z
  .object({
    repeatedToolCall: number().int().min(2),
    unchangedState: positiveInt,
    sameEvaluatorReason: positiveInt,
    duplicateObservation: positiveInt,
    planStall: positiveInt,
    sameParseError: positiveInt,
  })
  .partial()
  .strict();

const RESERVED_TASK_IDS: ReadonlySet<string> = new Set(['__proto__', 'constructor', 'prototype']);

const toolHealthSchema = z.custom<ToolHealth>(
  // Duck-typed, so a ToolHealth from another installed copy of loopstate is accepted too.
  (value) =>
    typeof value === 'object' && value !== null &&
    ['isOpen', 'recordSuccess', 'recordFailure', 'snapshot'].every((method) => isFunction((value as Record<string, unknown>)[method])) &&
    typeof (value as ToolHealth).threshold === 'number',
  { message: 'expected a ToolHealth, e.g. new ToolHealth({ threshold: 3 })' },
);

const contextSchema = z
  .object({
    // Infinity says "no ceiling" explicitly; leaving it out means the model's window, if known.
    maxInputTokensPerCall: z.union([positiveInt, z.literal(Infinity)], { error: 'expected a positive whole number of tokens, or Infinity for no ceiling' }).optional(),
    strategy: z.enum(['trim', 'summarize']).optional(),
    keepTurns: positiveInt.optional(),
  })
  .strict();

const taskSchema = z
  .object({
    // Task outputs are keyed by id; these names would collide with what every object inherits.
    id: z.string().min(1).refine((id) => !RESERVED_TASK_IDS.has(id), { error: (issue) => `"${String(issue.input)}" cannot be a task id; choose another name` }),
    prompt: z.union([z.string().min(1), fn('a function (context) => string')]),
    evaluate: evaluateSchema.optional(),
    requires: z.array(z.string().min(1)).optional(),
    onFailure: z.enum(['stop', 'continue']).optional(),
  })
  .strict();

const configSchema = z
  .object({
    model: modelSchema,
    instructions: z.string().optional(),
    tools: z.array(toolSchema).optional(),
    evaluate: evaluateSchema.optional(),
    tasks: z.array(taskSchema).min(1).optional(),
    limits: limitsSchema.optional(),
    noProgress: noProgressSchema.optional(),
    context: contextSchema.optional(),
    policy: z
      .object({
        allow: z.array(accessSchema).optional(),
        requireApproval: z.array(accessSchema).optional(),
        decide: fn('a function ({ tool, args, runId, callId }) => verdict').optional(),
        onDeny: z.enum(['stop', 'tell_model']).optional(),
      })
      .strict()
      .optional(),
    plan: z.boolean().optional(),
    prices: z.record(z.string(), z.object({ inputPerMillion: number().min(0), outputPerMillion: number().min(0) }).strict()).optional(),
    trace: z.union([z.literal(false), z.object({ inMemory: z.boolean().optional(), onEvent: fn('a function (event) => void').optional() }).strict()]).optional(),
    redact: redactSchema.optional(),
    retry: z.object({ baseMs: positiveInt, maxMs: positiveInt }).partial().strict().optional(),
    clock: z.custom<Clock>((value) => typeof value === 'object' && value !== null && isFunction((value as Clock).now) && isFunction((value as Clock).sleep) && isFunction((value as Clock).setTimer), { message: 'expected a Clock with now(), sleep(ms, signal) and setTimer(ms, callback)' }).optional(),
    random: fn('a function returning a number in [0, 1)').optional(),
    generateRunId: fn('a function returning a string').optional(),
    toolHealth: toolHealthSchema.optional(),
  })
  .strict()
  .superRefine((config, context) => {
    const window = config.model.contextWindowTokens;
    if (window !== undefined && !(Number.isInteger(window) && window > 0)) {
      context.addIssue({ code: 'custom', path: ['model', 'contextWindowTokens'], message: 'expected a positive integer (tokens one request may carry) or no value' });
    }
    const seen = new Set<string>();
    config.tools?.forEach((tool, index) => {
      if (seen.has(tool.name)) context.addIssue({ code: 'custom', path: ['tools', index, 'name'], message: `duplicate tool name "${tool.name}"` });
      // The model calls a tool by its spec's name: a renamed copy of a defined tool would never be reached.
      if (tool.name === '' || tool.spec?.name !== tool.name) {
        context.addIssue({ code: 'custom', path: ['tools', index, 'name'], message: `expected the name the tool was defined with ("${String(tool.spec?.name)}"), got "${tool.name}"; define the tool again with defineTool` });
      }
      if (config.plan === true && tool.name === PLAN_TOOL_NAME) {
        context.addIssue({ code: 'custom', path: ['tools', index, 'name'], message: `"${PLAN_TOOL_NAME}" is the built-in plan tool's name while \`plan: true\`; rename your tool or turn the plan tool off` });
      }
      seen.add(tool.name);
    });
    const taskIds = new Set<string>();
    config.tasks?.forEach((task, index) => {
      if (taskIds.has(task.id)) context.addIssue({ code: 'custom', path: ['tasks', index, 'id'], message: `duplicate task id "${task.id}"` });
      taskIds.add(task.id);
      task.requires?.forEach((name, requireIndex) => {
        if (!seen.has(name)) context.addIssue({ code: 'custom', path: ['tasks', index, 'requires', requireIndex], message: `unknown tool "${name}"; known: ${[...seen].join(', ') || '(none)'}` });
      });
    });
  });

/** Evaluator lists are checked by their own module; its paths are relative to the list. */
function evaluatorIssues(config: z.infer<typeof configSchema>): ConfigIssue[] {
  const lists: [string, readonly Evaluator[] | undefined][] = [
    ['evaluate', config.evaluate],
    ...(config.tasks ?? []).map((task, index): [string, readonly Evaluator[] | undefined] => [`tasks[${index}].evaluate`, task.evaluate]),
  ];
  return lists.flatMap(([prefix, list]) => validateEvaluators(list ?? []).map((issue) => ({ path: `${prefix}${issue.path}`, message: issue.message })));
}

/** The option names allowed at `path`, for the "did you mean" hint on unknown keys. */
function knownKeysAt(root: z.core.$ZodType, path: readonly PropertyKey[]): string[] {
  let schema: z.core.$ZodType | undefined = root;
  for (const key of [...path, null]) {
    while (schema instanceof z.ZodOptional) schema = schema.unwrap();
    if (schema instanceof z.ZodUnion) schema = schema.options.find((option) => option instanceof z.ZodObject);
    if (key === null) break;
    if (schema instanceof z.ZodArray && typeof key === 'number') schema = schema.element;
    else if (schema instanceof z.ZodObject && typeof key === 'string') schema = schema.shape[key];
    else if (schema instanceof z.ZodRecord && typeof key === 'string') schema = schema.valueType;
    else return [];
  }
  return schema instanceof z.ZodObject ? Object.keys(schema.shape) : [];
}

/** Levenshtein distance, for typo hints only (short option names). */
function editDistance(a: string, b: string): number {
  let previous = Array.from({ length: b.length + 1 }, (_, index) => index);
  for (let i = 1; i <= a.length; i++) {
    const current = [i];
    for (let j = 1; j <= b.length; j++) {
      current[j] = Math.min((previous[j] ?? 0) + 1, (current[j - 1] ?? 0) + 1, (previous[j - 1] ?? 0) + (a[i - 1] === b[j - 1] ? 0 : 1));
    }
    previous = current;
  }
  return previous[b.length] ?? 0;
}

function unknownKeyMessage(key: string, known: readonly string[]): string {
  const closest = [...known].sort((left, right) => editDistance(key, left) - editDistance(key, right))[0];
  if (closest !== undefined && editDistance(key, closest) <= 2) return `unknown option; did you mean "${closest}"?`;
  return known.length > 0 ? `unknown option; expected one of: ${known.join(', ')}` : 'unknown option';
}

/** zod issues as config issues; unknown keys get a "did you mean" hint from the schema that was checked. */
export function toConfigIssues(error: z.ZodError, root: z.core.$ZodType): ConfigIssue[] {
  return error.issues.flatMap((issue) =>
    issue.code === 'unrecognized_keys'
      ? issue.keys.map((key) => ({ path: z.core.toDotPath([...issue.path, key]), message: unknownKeyMessage(key, knownKeysAt(root, issue.path)) }))
      : [{ path: z.core.toDotPath(issue.path), message: issue.message }],
  );
}

/**
 * Bounds that scale with the run's: without a per-task bound a task may use every step the run has, and
 * without a tool-call budget every step may take a full reply of calls (so raising maxSteps never stops a
 * loop early on a budget it did not set).
 */
function resolveLimits(limits: Partial<LoopLimits> | undefined): LoopLimits {
  const merged = { ...DEFAULT_LIMITS, ...limits };
  return {
    ...merged,
    maxStepsPerTask: limits?.maxStepsPerTask ?? merged.maxSteps,
    maxToolCalls: limits?.maxToolCalls ?? merged.maxSteps * merged.maxToolCallsPerReply,
  };
}

let runCounter = 0;
/** The run id used when `generateRunId` is not given, or fails. */
export const defaultRunId = (): string => `run_${Date.now().toString(36)}_${(runCounter++).toString(36)}`;

/** Objects the loop calls into (model, clock, shared health, tools, evaluators) are kept as they are; the rest is copied as plain data. */
const keepConfigValue: KeepByReference = (path) => {
  const [last, parent] = [path.at(-1), path.at(-2)];
  if (path.length === 1 && (last === 'model' || last === 'clock' || last === 'toolHealth')) return true;
  // An evaluator may also be given alone, not in a list.
  return last === 'evaluate' || (typeof last === 'number' && (parent === 'tools' || parent === 'evaluate'));
};

/**
 * Snapshots `input` safely, then validates it: an unreadable field, a schema failure or a check that
 * throws all become one `LoopConfigError` of the given scope.
 */
function parseInput<Schema extends z.ZodType>(schema: Schema, input: unknown, keep: KeepByReference, scope: 'config' | 'run_input'): z.output<Schema> {
  const snapshot = snapshotInput(input, keep);
  if (snapshot.issues.length > 0) throw new LoopConfigError({ issues: snapshot.issues, scope });
  let parsed: z.ZodSafeParseResult<z.output<Schema>>;
  try {
    parsed = schema.safeParse(snapshot.value);
  } catch (error) {
    // A value whose own getters throw while a check reads them (e.g. a model's `id`).
    throw new LoopConfigError({ issues: [{ path: '', message: `could not be validated: ${error instanceof Error ? error.message : String(error)}` }], scope, cause: error });
  }
  if (!parsed.success) throw new LoopConfigError({ issues: toConfigIssues(parsed.error, schema), scope, cause: parsed.error });
  return parsed.data;
}

export function resolveConfig(input: unknown): ResolvedConfig {
  const config = parseInput(configSchema, input, keepConfigValue, 'config');
  const issues = evaluatorIssues(config);
  if (issues.length > 0) throw new LoopConfigError({ issues });
  return {
    model: config.model,
    instructions: config.instructions ?? '',
    tools: new Map((config.tools ?? []).map((tool) => [tool.name, tool])),
    evaluate: config.evaluate ?? [],
    tasks: (config.tasks as TaskConfig[] | undefined) ?? null,
    limits: resolveLimits(config.limits),
    noProgress: { ...DEFAULT_NO_PROGRESS, ...config.noProgress },
    context: {
      maxInputTokensPerCall: config.context?.maxInputTokensPerCall ?? config.model.contextWindowTokens ?? DEFAULT_CONTEXT.maxInputTokensPerCall,
      strategy: config.context?.strategy ?? DEFAULT_CONTEXT.strategy,
      keepTurns: config.context?.keepTurns ?? DEFAULT_CONTEXT.keepTurns,
    },
    policy: config.policy as ToolPolicy | undefined,
    plan: config.plan ?? false,
    prices: { ...DEFAULT_PRICES, ...config.prices },
    trace: config.trace === false ? { inMemory: false, onEvent: undefined } : { inMemory: config.trace?.inMemory ?? true, onEvent: config.trace?.onEvent as ResolvedConfig['trace']['onEvent'] },
    redact: createRedactor(config.redact),
    backoff: { ...DEFAULT_BACKOFF, ...config.retry },
    clock: config.clock ?? systemClock,
    random: (config.random as (() => number) | undefined) ?? Math.random,
    generateRunId: (config.generateRunId as (() => string) | undefined) ?? defaultRunId,
    toolHealth: config.toolHealth,
  };
}

const runInputSchema = z
  .object({
    goal: z.string().trim().min(1, 'expected a non-empty goal').optional(),
    // Checked message by message in validateRunInput, so each issue names its message.
    messages: z.unknown().optional(),
    runId: z.string({ error: (issue) => (issue.code === 'invalid_type' ? `expected the run id as a string, got ${issue.input === null ? 'null' : typeof issue.input}` : undefined) }).min(1).max(200).optional(),
    signal: z.custom<AbortSignal>((value) => value instanceof AbortSignal, { message: 'expected an AbortSignal' }).optional(),
  })
  .strict();

/**
 * One run's input: a `goal`, a prior conversation (`messages`), or both.
 * @example
 * const controller = new AbortController();
 * await loop.run({ goal: 'Status of O-101?', runId: 'order-O-101', signal: controller.signal });
 * // Turn by turn: pass the last result's transcript back with the next question.
 * const first = await loop.run({ goal: 'Status of O-101?' });
 * const second = await loop.run({ goal: 'And O-102?', messages: first.messages });
 */
export interface RunInput {
  /** The task. Optional when `messages` is given: the conversation's last user message is the task then. */
  goal?: string;
  /**
   * A prior conversation the run continues, e.g. an earlier `result.messages`. Each tool message
   * must answer a call of the assistant message before it, and every call must be answered. A
   * leading system message is taken as an earlier copy of the loop's instructions and not repeated.
   * With `tasks`, the conversation is the context of the first task only.
   */
  messages?: readonly Message[];
  runId?: string;
  signal?: AbortSignal;
}

const keepRunInputValue: KeepByReference = (path) => path.length === 1 && path[0] === 'signal';

export function validateRunInput(input: unknown): RunInput {
  const { messages: given, ...rest } = parseInput(runInputSchema, input, keepRunInputValue, 'run_input');
  const runInputError = (issues: ConfigIssue[]) => new LoopConfigError({ issues, scope: 'run_input' });
  if (given === undefined) {
    if (rest.goal === undefined) throw runInputError([{ path: 'goal', message: 'expected a non-empty goal, or a prior conversation in `messages`' }]);
    return rest;
  }
  const { messages, issues } = checkMessages(given);
  if (issues.length === 0 && rest.goal === undefined && messages.at(-1)?.role !== 'user') {
    issues.push({ path: 'messages', message: 'without a goal the conversation must end with a user message (the task); pass a goal or append the next user message' });
  }
  if (issues.length > 0) throw runInputError(issues);
  return { ...rest, messages };
}
