/**
 * `createLoop` config: validated with zod before anything runs (STYLE §6). Bad config throws
 * `LoopConfigError` naming each bad field's path and what was expected.
 */
import { z } from 'zod';
import { DEFAULT_BACKOFF, DEFAULT_CONTEXT, DEFAULT_LIMITS, DEFAULT_NO_PROGRESS, DEFAULT_PRICES, type ModelPrice } from './constants.js';
import type { ContextOptions, ResolvedContextOptions } from './context/context-window.js';
import { LoopConfigError, type ConfigIssue } from './errors.js';
import { validateEvaluators, type Evaluator } from './evaluators/index.js';
import { systemClock, type Clock } from './runtime/clock.js';
import type { BackoffOptions } from './runtime/retry-policy.js';
import type { LoopLimits, NoProgressThresholds, TaskFailurePolicy } from '../machines/types.js';
import type { Message, Model } from './model/types.js';
import { checkMessages } from './conversation/prior-conversation.js';
import type { Tool, ToolPolicy } from './tools/index.js';
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
export interface TaskConfig {
  id: string;
  prompt: string | ((context: TaskPromptContext) => string);
  /** This task's evaluators; defaults to the loop's `evaluate`. */
  evaluate?: readonly Evaluator[];
  /** Tools the task cannot do without: if one becomes unavailable the run stops with `tool_unavailable`. */
  requires?: readonly string[];
  /** `stop` (default) ends the run when the task fails for good; `continue` records a warning and goes on. */
  onFailure?: TaskFailurePolicy;
}

/**
 * Everything `createLoop` accepts; only `model` is required. Validated before anything runs.
 * @example
 * const config: LoopConfig = { model, tools: [getOrderStatus], limits: { maxSteps: 4, maxCostUsd: 0.05 } };
 */
export interface LoopConfig {
  model: Model;
  instructions?: string;
  tools?: readonly Tool[];
  evaluate?: readonly Evaluator[];
  tasks?: readonly TaskConfig[];
  limits?: Partial<LoopLimits>;
  noProgress?: Partial<NoProgressThresholds>;
  /** Keeps each request under a per-call input ceiling by trimming or summarizing older turns. */
  context?: ContextOptions;
  policy?: ToolPolicy;
  /** USD per million tokens by model id, merged over the defaults. */
  prices?: Readonly<Record<string, ModelPrice>>;
  trace?: TraceOptions | false;
  retry?: Partial<BackoffOptions>;
  /** Injected time source; tests pass a virtual clock. */
  clock?: Clock;
  /** Injected [0, 1) source for backoff jitter; tests pass a seeded one. */
  random?: () => number;
  /** Run id generator when `run()` is not given one. */
  generateRunId?: () => string;
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
  prices: Readonly<Record<string, ModelPrice>>;
  trace: { inMemory: boolean; onEvent: ((event: TraceEvent) => void) | undefined };
  backoff: BackoffOptions;
  clock: Clock;
  random: () => number;
  generateRunId: () => string;
}

const isFunction = (value: unknown): value is (...args: never[]) => unknown => typeof value === 'function';
const fn = (expected: string) => z.custom<(...args: never[]) => unknown>(isFunction, { message: `expected ${expected}` });
const positiveInt = z.number().int().positive();
const MAX_TIMER_MS = 2_147_483_647;
const nonNegativeInt = z.number().int().min(0);

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
const accessSchema = z.enum(['read', 'write', 'destructive']);

const limitsSchema = z
  .object({
    maxSteps: positiveInt,
    maxRetries: nonNegativeInt,
    // Node fires longer timers at once, which would end every run immediately.
    deadlineMs: positiveInt.max(MAX_TIMER_MS, `must be at most ${MAX_TIMER_MS} ms (about 24.8 days), the longest timer Node supports`),
    maxInputTokens: positiveInt,
    maxOutputTokens: positiveInt,
    maxCostUsd: z.number().positive(),
    maxParallelTools: positiveInt,
    // Below this a truncation marker would not fit.
    maxToolResultBytes: z.number().int().min(128),
    maxArgumentRepairs: nonNegativeInt,
  })
  .partial()
  .strict();

const noProgressSchema = z
  .object({
    repeatedToolCall: z.number().int().min(2),
    unchangedState: positiveInt,
    sameEvaluatorReason: positiveInt,
    duplicateObservation: positiveInt,
    planStall: positiveInt,
    sameParseError: positiveInt,
  })
  .partial()
  .strict();

const contextSchema = z
  .object({
    // Infinity says "no ceiling" explicitly; leaving it out means the model's window, if known.
    maxInputTokensPerCall: z.union([positiveInt, z.literal(Infinity)]).optional(),
    strategy: z.enum(['trim', 'summarize']).optional(),
    keepTurns: positiveInt.optional(),
  })
  .strict();

const taskSchema = z
  .object({
    id: z.string().min(1),
    prompt: z.union([z.string().min(1), fn('a function (context) => string')]),
    evaluate: z.array(evaluatorSchema).optional(),
    requires: z.array(z.string().min(1)).optional(),
    onFailure: z.enum(['stop', 'continue']).optional(),
  })
  .strict();

const configSchema = z
  .object({
    model: modelSchema,
    instructions: z.string().optional(),
    tools: z.array(toolSchema).optional(),
    evaluate: z.array(evaluatorSchema).optional(),
    tasks: z.array(taskSchema).min(1).optional(),
    limits: limitsSchema.optional(),
    noProgress: noProgressSchema.optional(),
    context: contextSchema.optional(),
    policy: z
      .object({ allow: z.array(accessSchema).optional(), requireApproval: z.array(accessSchema).optional(), decide: fn('a function ({ tool, args }) => verdict').optional() })
      .strict()
      .optional(),
    prices: z.record(z.string(), z.object({ inputPerMillion: z.number().min(0), outputPerMillion: z.number().min(0) }).strict()).optional(),
    trace: z.union([z.literal(false), z.object({ inMemory: z.boolean().optional(), onEvent: fn('a function (event) => void').optional() }).strict()]).optional(),
    retry: z.object({ baseMs: positiveInt, maxMs: positiveInt }).partial().strict().optional(),
    clock: z.custom<Clock>((value) => typeof value === 'object' && value !== null && isFunction((value as Clock).now) && isFunction((value as Clock).sleep) && isFunction((value as Clock).setTimer), { message: 'expected a Clock with now(), sleep(ms, signal) and setTimer(ms, callback)' }).optional(),
    random: fn('a function returning a number in [0, 1)').optional(),
    generateRunId: fn('a function returning a string').optional(),
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

let runCounter = 0;
const defaultRunId = () => `run_${Date.now().toString(36)}_${(runCounter++).toString(36)}`;

export function resolveConfig(input: unknown): ResolvedConfig {
  const parsed = configSchema.safeParse(input);
  if (!parsed.success) throw new LoopConfigError({ issues: toConfigIssues(parsed.error, configSchema), cause: parsed.error });
  const config = parsed.data;
  const issues = evaluatorIssues(config);
  if (issues.length > 0) throw new LoopConfigError({ issues });
  return {
    model: config.model,
    instructions: config.instructions ?? '',
    tools: new Map((config.tools ?? []).map((tool) => [tool.name, tool])),
    evaluate: config.evaluate ?? [],
    tasks: (config.tasks as TaskConfig[] | undefined) ?? null,
    limits: { ...DEFAULT_LIMITS, ...config.limits },
    noProgress: { ...DEFAULT_NO_PROGRESS, ...config.noProgress },
    context: {
      maxInputTokensPerCall: config.context?.maxInputTokensPerCall ?? config.model.contextWindowTokens ?? DEFAULT_CONTEXT.maxInputTokensPerCall,
      strategy: config.context?.strategy ?? DEFAULT_CONTEXT.strategy,
      keepTurns: config.context?.keepTurns ?? DEFAULT_CONTEXT.keepTurns,
    },
    policy: config.policy as ToolPolicy | undefined,
    prices: { ...DEFAULT_PRICES, ...config.prices },
    trace: config.trace === false ? { inMemory: false, onEvent: undefined } : { inMemory: config.trace?.inMemory ?? true, onEvent: config.trace?.onEvent as ResolvedConfig['trace']['onEvent'] },
    backoff: { ...DEFAULT_BACKOFF, ...config.retry },
    clock: config.clock ?? systemClock,
    random: (config.random as (() => number) | undefined) ?? Math.random,
    generateRunId: (config.generateRunId as (() => string) | undefined) ?? defaultRunId,
  };
}

const runInputSchema = z
  .object({
    goal: z.string().trim().min(1, 'expected a non-empty goal').optional(),
    // Checked message by message in validateRunInput, so each issue names its message.
    messages: z.unknown().optional(),
    runId: z.string().min(1).max(200).optional(),
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

export function validateRunInput(input: unknown): RunInput {
  const parsed = runInputSchema.safeParse(input);
  if (!parsed.success) throw new LoopConfigError({ issues: toConfigIssues(parsed.error, runInputSchema), cause: parsed.error });
  const { messages: given, ...rest } = parsed.data;
  if (given === undefined) {
    if (rest.goal === undefined) throw new LoopConfigError({ issues: [{ path: 'goal', message: 'expected a non-empty goal, or a prior conversation in `messages`' }] });
    return rest;
  }
  const { messages, issues } = checkMessages(given);
  if (issues.length === 0 && rest.goal === undefined && messages.at(-1)?.role !== 'user') {
    issues.push({ path: 'messages', message: 'without a goal the conversation must end with a user message (the task); pass a goal or append the next user message' });
  }
  if (issues.length > 0) throw new LoopConfigError({ issues });
  return { ...rest, messages };
}
