/**
 * The zod schemas of `createLoop`'s config and `run()`'s input: what each field accepts, and the
 * cross-field checks (duplicate names, unknown required tools, reserved ids).
 */
import { z } from 'zod';
import type { Clock } from '../runtime/clock.js';
import type { Evaluator } from '../evaluators/index.js';
import type { Model } from '../../contracts/model.js';
import { PLAN_TOOL_NAME } from '../plan/plan-tool.js';
import type { Store } from '../../contracts/store.js';
import type { Tool, ToolHealth } from '../tools/index.js';
import type { Context, MeterProvider, Tracer } from '@opentelemetry/api';
import { MAX_LOOP_NAME_CHARS } from '../constants.js';
import { traceFileProblem } from '../trace/trace-file-writer.js';
import { isInspectOption, type InspectOption } from '../runtime/inspect-option.js';

export const isFunction = (value: unknown): value is (...args: never[]) => unknown => typeof value === 'function';
const fn = (expected: string) =>
  z.custom<(...args: never[]) => unknown>(isFunction, { message: `expected ${expected}` });
/** A number whose type error says NaN, Infinity or a fraction plainly instead of "expected number, received NaN". */
const number = () =>
  z.number({
    error: (issue) =>
      issue.code !== 'invalid_type' || typeof issue.input !== 'number'
        ? undefined
        : Number.isNaN(issue.input)
          ? 'expected a number, got NaN'
          : Number.isFinite(issue.input)
            ? `expected a whole number, got ${issue.input}`
            : `expected a finite number, got ${issue.input}`,
  });
const positiveInt = number().int().positive();
export const MAX_TIMER_MS = 2_147_483_647;
const nonNegativeInt = number().int().min(0);

/** A budget that may be switched off explicitly with `Infinity`; any other value must pass `finite`. */
const finiteOrInfinity = (finite: z.ZodNumber) =>
  z.custom<number>((value) => value === Infinity || finite.safeParse(value).success, {
    error: (issue) =>
      `${finite.safeParse(issue.input).error?.issues[0]?.message ?? 'invalid value'} (or Infinity for no limit)`,
  });

const modelSchema = z.custom<Model>(
  (value) =>
    typeof value === 'object' &&
    value !== null &&
    typeof (value as Model).id === 'string' &&
    isFunction((value as Model).generate),
  {
    message:
      'expected a Model: an object with a string `id` and a `generate(request)` method (e.g. scriptedModel([...]))',
  },
);
const toolSchema = z.custom<Tool>(
  (value) =>
    typeof value === 'object' &&
    value !== null &&
    typeof (value as Tool).name === 'string' &&
    isFunction((value as Tool).execute) &&
    typeof (value as Tool).spec === 'object',
  { message: 'expected a tool made with defineTool({...})' },
);
const evaluatorSchema = z.custom<Evaluator>(
  (value) =>
    typeof value === 'object' &&
    value !== null &&
    typeof (value as Evaluator).name === 'string' &&
    isFunction((value as Evaluator).evaluate),
  { message: 'expected an evaluator, e.g. evaluators.json() or evaluators.rule(...)' },
);
const isRegExp = (value: unknown): value is RegExp => Object.prototype.toString.call(value) === '[object RegExp]';
const redactSchema = z
  .object({
    keys: z.array(
      z.union([z.string().min(1, 'expected a non-empty key name'), z.custom<RegExp>(isRegExp)], {
        error: 'expected a key name (string) or a RegExp',
      }),
    ),
    patterns: z.array(
      z
        .custom<RegExp>(isRegExp, { message: 'expected a RegExp' })
        // A pattern that matches nothing at all would put a marker between every character.
        .refine((pattern) => !new RegExp(pattern.source, pattern.flags.replace(/[gy]/g, '')).test(''), {
          message: 'must not match the empty string',
        }),
    ),
  })
  .partial()
  .strict();
// One evaluator is a list of one; anything else must be a list, so bad input is named as such.
const evaluateSchema = z.preprocess(
  (value) =>
    typeof value === 'object' && value !== null && !Array.isArray(value) && evaluatorSchema.safeParse(value).success
      ? [value]
      : value,
  z.array(evaluatorSchema, { error: 'expected an evaluator or an array of evaluators' }),
);
const accessSchema = z.enum(['read', 'write', 'destructive']);

const limitsSchema = z
  .object({
    maxSteps: positiveInt,
    maxRetries: nonNegativeInt,
    // Per call, the first attempt included; finite, so every retry cycle passes a counter.
    maxTransportAttempts: positiveInt,
    maxTransportRetries: finiteOrInfinity(nonNegativeInt),
    // Node fires longer timers at once, which would end every run immediately.
    deadlineMs: finiteOrInfinity(
      positiveInt.max(
        MAX_TIMER_MS,
        `must be at most ${MAX_TIMER_MS} ms (about 24.8 days), the longest timer Node supports`,
      ),
    ),
    maxInputTokens: finiteOrInfinity(positiveInt),
    maxOutputTokens: finiteOrInfinity(positiveInt),
    maxCostUsd: finiteOrInfinity(number().positive()),
    maxParallelTools: positiveInt,
    // Below this a truncation marker would not fit.
    maxToolResultBytes: number().int().min(128),
    maxArgumentRepairs: nonNegativeInt,
    maxStepsPerTask: positiveInt,
    modelCallTimeoutMs: positiveInt.max(
      MAX_TIMER_MS,
      `must be at most ${MAX_TIMER_MS} ms, the longest timer Node supports`,
    ),
    evaluatorTimeoutMs: finiteOrInfinity(
      positiveInt.max(MAX_TIMER_MS, `must be at most ${MAX_TIMER_MS} ms, the longest timer Node supports`),
    ),
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
    typeof value === 'object' &&
    value !== null &&
    ['isOpen', 'recordSuccess', 'recordFailure', 'snapshot'].every((method) =>
      isFunction((value as Record<string, unknown>)[method]),
    ) &&
    typeof (value as ToolHealth).threshold === 'number',
  { message: 'expected a ToolHealth, e.g. new ToolHealth({ threshold: 3 })' },
);

const contextSchema = z
  .object({
    // Infinity says "no ceiling" explicitly; leaving it out means the model's window, if known.
    maxInputTokensPerCall: z
      .union([positiveInt, z.literal(Infinity)], {
        error: 'expected a positive whole number of tokens, or Infinity for no ceiling',
      })
      .optional(),
    strategy: z.enum(['trim', 'summarize']).optional(),
    keepTurns: positiveInt.optional(),
  })
  .strict();

const taskSchema = z
  .object({
    // Task outputs are keyed by id; these names would collide with what every object inherits.
    id: z
      .string()
      .min(1)
      .refine((id) => !RESERVED_TASK_IDS.has(id), {
        error: (issue) => `"${String(issue.input)}" cannot be a task id; choose another name`,
      }),
    prompt: z.union([z.string().min(1), fn('a function (context) => string')]),
    evaluate: evaluateSchema.optional(),
    requires: z.array(z.string().min(1)).optional(),
    onFailure: z.enum(['stop', 'continue']).optional(),
  })
  .strict();

const otelSchema = z
  .object({
    tracer: z
      .custom<Tracer>(
        (value) => typeof value === 'object' && value !== null && isFunction((value as Tracer).startSpan),
        { message: 'expected an OpenTelemetry Tracer (e.g. trace.getTracer(name))' },
      )
      .optional(),
    parent: z
      .custom<Context>(
        (value) =>
          typeof value === 'object' &&
          value !== null &&
          isFunction((value as Context).getValue) &&
          isFunction((value as Context).setValue),
        { message: 'expected an OpenTelemetry Context (e.g. trace.setSpan(context.active(), span))' },
      )
      .optional(),
    meterProvider: z
      .custom<MeterProvider>(
        (value) => typeof value === 'object' && value !== null && isFunction((value as MeterProvider).getMeter),
        { message: 'expected an OpenTelemetry MeterProvider (e.g. new MeterProvider({ readers }))' },
      )
      .optional(),
  })
  .strict();

const traceSchema = z
  .object({
    inMemory: z.boolean().optional(),
    onEvent: fn('a function (event) => void').optional(),
    file: z
      .string({
        error: (issue) =>
          issue.code === 'invalid_type'
            ? `expected a file path as a string, got ${issue.input === null ? 'null' : typeof issue.input}`
            : undefined,
      })
      .min(1, { message: 'expected a non-empty file path', abort: true })
      .superRefine((path, context) => {
        const problem = traceFileProblem(path);
        if (problem !== null) context.addIssue({ code: 'custom', message: `cannot write the trace there: ${problem}` });
      })
      .optional(),
    prompts: z.boolean().optional(),
    otel: z.union([z.literal(false), otelSchema]).optional(),
  })
  .strict();

/** The loop's name: a span attribute and a key runs are grouped by, so it is short, printable and has no edge spaces. */
const loopNameSchema = z
  .string({ error: (issue) => (issue.code === 'invalid_type' ? 'expected the loop name as a string' : undefined) })
  .trim()
  .min(1, { message: 'expected a non-empty name (spaces alone do not count)' })
  .max(MAX_LOOP_NAME_CHARS, { message: `expected at most ${MAX_LOOP_NAME_CHARS} characters` })
  // eslint-disable-next-line no-control-regex -- control characters are exactly what is refused
  .regex(/^[^\u0000-\u001f\u007f]*$/, { message: 'expected no control characters (newlines, tabs, ...)' });

export const configSchema = z
  .object({
    model: modelSchema,
    name: loopNameSchema.optional(),
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
    prices: z
      .record(
        z.string(),
        z
          .object({
            inputPerMillion: number().min(0),
            cachedInputPerMillion: number().min(0).optional(),
            outputPerMillion: number().min(0),
          })
          .strict(),
      )
      .optional(),
    trace: z.union([z.literal(false), traceSchema]).optional(),
    redact: redactSchema.optional(),
    retry: z
      .object({ baseMs: positiveInt, maxMs: positiveInt, maxRetryAfterMs: nonNegativeInt.max(MAX_TIMER_MS) })
      .partial()
      .strict()
      .optional(),
    clock: z
      .custom<Clock>(
        (value) =>
          typeof value === 'object' &&
          value !== null &&
          isFunction((value as Clock).now) &&
          isFunction((value as Clock).sleep) &&
          isFunction((value as Clock).setTimer),
        { message: 'expected a Clock with now(), sleep(ms, signal) and setTimer(ms, callback)' },
      )
      .optional(),
    random: fn('a function returning a number in [0, 1)').optional(),
    generateRunId: fn('a function returning a string').optional(),
    toolHealth: toolHealthSchema.optional(),
    toolOrder: z.enum(['declared', 'success_rate']).optional(),
    store: z
      .custom<Store>(
        (value) =>
          typeof value === 'object' &&
          value !== null &&
          isFunction((value as Store).append) &&
          isFunction((value as Store).readJournal) &&
          isFunction((value as Store).acquireLease),
        { message: 'expected a Store, e.g. sqliteStore({ path }) or memoryStore()' },
      )
      .optional(),
    tenant: z
      .object({
        id: z.string().min(1),
        maxCostUsd: number().min(0).optional(),
        maxInputTokens: number().int().min(0).optional(),
        maxOutputTokens: number().int().min(0).optional(),
      })
      .strict()
      .optional(),
    durable: z
      .object({
        snapshotEvery: positiveInt,
        approvalExpiresAfterMs: positiveInt,
        leaseMs: positiveInt,
        maxUncommittedSteps: nonNegativeInt,
        maxUncommittedMs: finiteOrInfinity(number().min(0)),
      })
      .partial()
      .strict()
      .optional(),
    learning: z
      .object({
        learningRate: number().gt(0).max(1),
        batchWindow: z
          .object({ outcomes: positiveInt, ms: finiteOrInfinity(number().min(0)) })
          .partial()
          .strict(),
        halfLifeMs: finiteOrInfinity(number().gt(0)),
        topReasons: nonNegativeInt,
      })
      .partial()
      .strict()
      .optional(),
    inspect: z
      .custom<InspectOption>(isInspectOption, {
        message:
          'expected an XState inspection observer: a function (inspectionEvent) => void, or an object with next/error/complete methods such as statelyInspector({ url })',
      })
      .optional(),
  })
  .strict()
  .superRefine((config, context) => {
    if (config.tenant !== undefined && config.store === undefined) {
      context.addIssue({
        code: 'custom',
        path: ['tenant'],
        message: 'a tenant budget is a ledger in the store: pass a store too (e.g. sqliteStore({ path }))',
      });
    }
    if (config.learning !== undefined && config.store === undefined)
      context.addIssue({
        code: 'custom',
        path: ['learning'],
        message: 'learning is kept in the store: pass a store too (e.g. sqliteStore({ path }))',
      });
    if (config.learning !== undefined && config.toolHealth !== undefined)
      context.addIssue({
        code: 'custom',
        path: ['learning'],
        message:
          'learning shares tool health through the store, toolHealth through one object: pass one of them, not both',
      });
    const window = config.model.contextWindowTokens;
    if (window !== undefined && !(Number.isInteger(window) && window > 0)) {
      context.addIssue({
        code: 'custom',
        path: ['model', 'contextWindowTokens'],
        message: 'expected a positive integer (tokens one request may carry) or no value',
      });
    }
    const seen = new Set<string>();
    config.tools?.forEach((tool, index) => {
      if (seen.has(tool.name))
        context.addIssue({
          code: 'custom',
          path: ['tools', index, 'name'],
          message: `duplicate tool name "${tool.name}"`,
        });
      // The model calls a tool by its spec's name: a renamed copy of a defined tool would never be reached.
      if (tool.name === '' || tool.spec?.name !== tool.name) {
        context.addIssue({
          code: 'custom',
          path: ['tools', index, 'name'],
          message: `expected the name the tool was defined with ("${String(tool.spec?.name)}"), got "${tool.name}"; define the tool again with defineTool`,
        });
      }
      if (config.plan === true && tool.name === PLAN_TOOL_NAME) {
        context.addIssue({
          code: 'custom',
          path: ['tools', index, 'name'],
          message: `"${PLAN_TOOL_NAME}" is the built-in plan tool's name while \`plan: true\`; rename your tool or turn the plan tool off`,
        });
      }
      seen.add(tool.name);
    });
    const taskIds = new Set<string>();
    config.tasks?.forEach((task, index) => {
      if (taskIds.has(task.id))
        context.addIssue({ code: 'custom', path: ['tasks', index, 'id'], message: `duplicate task id "${task.id}"` });
      taskIds.add(task.id);
      task.requires?.forEach((name, requireIndex) => {
        if (!seen.has(name))
          context.addIssue({
            code: 'custom',
            path: ['tasks', index, 'requires', requireIndex],
            message: `unknown tool "${name}"; known: ${[...seen].join(', ') || '(none)'}`,
          });
      });
    });
  });

export const runInputSchema = z
  .object({
    goal: z.string().trim().min(1, 'expected a non-empty goal').optional(),
    // Checked message by message in validateRunInput, so each issue names its message.
    messages: z.unknown().optional(),
    runId: z
      .string({
        error: (issue) =>
          issue.code === 'invalid_type'
            ? `expected the run id as a string, got ${issue.input === null ? 'null' : typeof issue.input}`
            : undefined,
      })
      .min(1)
      .max(200)
      .optional(),
    signal: z
      .custom<AbortSignal>((value) => value instanceof AbortSignal, { message: 'expected an AbortSignal' })
      .optional(),
  })
  .strict();
