/**
 * Every default in one place. Start strict and loosen per task.
 */
import type { LoopLimits, NoProgressThresholds } from '../../machines/types.js';
import type { ResolvedContextOptions } from '../contracts/context-options.js';
import type { ModelPrice } from '../contracts/model.js';
import { OPENAI_PRICES } from './pricing/openai-prices.js';

/**
 * Budgets used when `limits` leaves them out or sets them to `undefined` (an `undefined` never switches
 * a budget off; `Infinity` does, for maxCostUsd, maxInputTokens, maxOutputTokens, maxToolCalls,
 * maxTransportRetries, deadlineMs and evaluatorTimeoutMs). Two scale with the others instead of having a fixed default:
 * `maxStepsPerTask` is `maxSteps`, and `maxToolCalls` is `maxSteps × maxToolCallsPerReply`. Transport
 * attempts are per call (3: the first and two retries); the run-wide `maxTransportRetries` is off by
 * default, since every retry is also a model call the step, token, cost and deadline budgets bound.
 * @example
 * createLoop({ model, limits: { ...DEFAULT_LIMITS, maxSteps: 20 } });
 */
export const DEFAULT_LIMITS: Readonly<Omit<LoopLimits, 'maxStepsPerTask' | 'maxToolCalls'>> = Object.freeze({
  maxSteps: 10,
  maxRetries: 2,
  maxTransportAttempts: 3,
  maxTransportRetries: Infinity,
  deadlineMs: 120_000,
  maxInputTokens: 200_000,
  maxOutputTokens: 20_000,
  maxCostUsd: 1,
  maxParallelTools: 4,
  maxToolResultBytes: 16_384,
  maxArgumentRepairs: 1,
  modelCallTimeoutMs: 60_000,
  // A rule or schema check takes microseconds; this leaves room for one that calls a service or runs tests.
  evaluatorTimeoutMs: 60_000,
  maxToolCallsPerReply: 20,
});

/**
 * No-progress thresholds used when `noProgress` leaves them out.
 * @example
 * createLoop({ model, noProgress: { ...DEFAULT_NO_PROGRESS, repeatedToolCall: 2 } });
 */
export const DEFAULT_NO_PROGRESS: Readonly<NoProgressThresholds> = Object.freeze({
  // The same call with the same result a second time nudges; a third time stops. A changed result never counts.
  repeatedToolCall: 2,
  unchangedState: 3,
  // The identical output rejected for the identical reason a second time: the fed-back reason changed nothing.
  sameEvaluatorReason: 2,
  duplicateObservation: 2,
  // Only with the plan tool: decisions without a plan item completed or removed.
  planStall: 10,
  sameParseError: 2,
});

/**
 * How the transcript is kept inside a per-call input ceiling when `context` leaves a field out.
 * The ceiling defaults to the model's `contextWindowTokens` when its adapter reports one, and to
 * none (`Infinity`) otherwise.
 * @example
 * createLoop({ model, context: { ...DEFAULT_CONTEXT, maxInputTokensPerCall: 16_000 } });
 */
export const DEFAULT_CONTEXT: Readonly<ResolvedContextOptions> = Object.freeze({
  maxInputTokensPerCall: Infinity,
  strategy: 'trim',
  keepTurns: 4,
});

/** Output tokens reserved for a `summarize` call when checking that the budgets can pay for it. */
export const CONTEXT_SUMMARY_OUTPUT_TOKENS = 512;

/**
 * The loop's name when the config gives none: OpenTelemetry's `gen_ai.agent.name` and `loop.name`.
 * @example
 * createLoop({ model }).name; // 'loopstate'
 */
export const DEFAULT_LOOP_NAME = 'loopstate';

/** A loop name's longest length: it is a span attribute and a key, not prose. */
export const MAX_LOOP_NAME_CHARS = 128;

/** Default per-call tool timeout when a tool does not set its own. */
export const DEFAULT_TOOL_TIMEOUT_MS = 30_000;

/** Consecutive failures after which a tool's circuit breaker opens and the tool is withheld. */
export const DEFAULT_CIRCUIT_BREAKER_THRESHOLD = 3;

/** How long an open circuit withholds its tool before offering it again (half-open). */
export const DEFAULT_CIRCUIT_COOLDOWN_MS = 30_000;

/**
 * Transport backoff: full jitter over base * 2^attempt, capped at `maxMs`; a server's Retry-After is
 * waited out, but never longer than `maxRetryAfterMs`.
 */
export const DEFAULT_BACKOFF = Object.freeze({ baseMs: 500, maxMs: 30_000, maxRetryAfterMs: 60_000 });

/**
 * Defaults of `openaiModel` options left out or `undefined`. `timeoutMs` bounds a whole HTTP call
 * (like the client's own ten-minute default, but through the whole body); inside a loop the
 * tighter `limits.modelCallTimeoutMs` (60 s) usually fires first. `idleTimeoutMs` is the longest
 * silence after the response headers, between two pieces of the body. `maxResponseBytes` (16 MiB) bounds
 * one response body as it is read, far above any real completion; `redirects: 'refuse'` follows none.
 * @example
 * openaiModel({ model: 'gpt-4.1-mini', idleTimeoutMs: OPENAI_DEFAULTS.idleTimeoutMs * 4 }); // a model that thinks silently
 */
export const OPENAI_DEFAULTS = Object.freeze({
  api: 'chat' as 'chat' | 'responses',
  timeoutMs: 600_000,
  idleTimeoutMs: 30_000,
  stream: false,
  structuredOutput: true,
  maxResponseBytes: 16 * 1024 * 1024,
  redirects: 'refuse' as 'refuse' | 'same-origin',
});

/**
 * Defaults of `aiSdkModel` options left out or `undefined`: unstreamed calls (`doGenerate`), and the task's
 * answer schema asked for as structured output.
 * @example
 * aiSdkModel(anthropic('claude-sonnet-4-5'), { stream: !AI_SDK_DEFAULTS.stream });
 */
export const AI_SDK_DEFAULTS = Object.freeze({
  stream: false,
  structuredOutput: true,
});

/** Rough characters per token for pre-call estimates; errs high for English text. */
export const CHARS_PER_TOKEN_ESTIMATE = 4;

/**
 * The built-in price table (USD per million tokens), merged under `prices`: current OpenAI models
 * (with their cached-input rate) and the scripted test model.
 * @example
 * const price = DEFAULT_PRICES['gpt-4.1-mini']; // { inputPerMillion: 0.4, cachedInputPerMillion: 0.1, outputPerMillion: 1.6 }
 */
export const DEFAULT_PRICES: Readonly<Record<string, ModelPrice>> = Object.freeze({
  ...OPENAI_PRICES,
  // The offline scripted model is priced like a small hosted model so cost budgets are exercised offline.
  scripted: { inputPerMillion: 0.4, outputPerMillion: 1.6 },
});

/**
 * Defaults of durable runs (`createLoop({ store, durable })`).
 * @example
 * DEFAULT_DURABLE.snapshotEvery; // 32
 */
export const DEFAULT_DURABLE = Object.freeze({
  snapshotEvery: 32,
  approvalExpiresAfterMs: null as number | null,
  leaseMs: 30_000,
  maxUncommittedSteps: 16,
  maxUncommittedMs: 20,
});

/**
 * Defaults of `dbosWorker`.
 * @example
 * DEFAULT_DBOS_WORKER.deadAfterMs; // 5 000
 */
export const DEFAULT_DBOS_WORKER = Object.freeze({
  applicationName: 'loopstate',
  queueName: 'loopstate-runs',
  workerConcurrency: 4,
  heartbeatMs: 1_000,
  deadAfterMs: 5_000,
  queuePollingIntervalMs: 20,
  pollingIntervalMs: 20,
  drainTimeoutMs: 30_000,
  stepsPerWorkflow: 200,
  approvalWaitMs: 24 * 60 * 60_000,
});

/**
 * Learning across runs (`learning: {}`): how far one batch moves a weight (0.2: a batch of failures
 * takes a perfect tool's weight to 0.8, not to 0), a batch written every 20 outcomes or 30 s (and at
 * the end of every run), and old outcomes weighing half after a day.
 * @example
 * DEFAULT_LEARNING.halfLifeMs; // 86_400_000
 */
export const DEFAULT_LEARNING = Object.freeze({
  learningRate: 0.2,
  batchWindow: Object.freeze({ outcomes: 20, ms: 30_000 }),
  halfLifeMs: 86_400_000,
  /** Failure reasons kept per task, the most frequent first. */
  topReasons: 3,
});
