/**
 * The trace schema: every event a run records, as zod schemas, so a JSON lines file written by one
 * version can be read and checked by another (the viewer, the CLI, your own tools).
 *
 * Changelog (bump `TRACE_SCHEMA_VERSION` when a field changes meaning or goes away; added fields and
 * added event types keep the version, and readers ignore what they do not know):
 * - 1: run-start (prompt version, limits), step-start (with the budget snapshot), step-end, prompt,
 *   tool-end, evaluation-end, retry, no-progress, transition, model-error, context-trimmed, warning, run-end,
 *   and the live model-delta and model-tool-call-start (onEvent only); a durable run's run-resume and approval-decided.
 *   Added since (version unchanged): tool-health; retry's optional argumentErrors (the field errors of an argument repair);
 *   model-error's optional inputTokens, outputTokens and costUsd (usage reported by a call that then failed);
 *   review-requested and review-decided (a person's review of an output).
 *   Added in 0.2.0 (version unchanged, every field optional, so older files still read): run-start's optional
 *   name (the loop's), provider, server and settings (the model's); step-end's optional metadata (the
 *   response's id, model and finish reason).
 * - 2: machine-event, every outcome event the machine was sent (the driver's summary: digests, counts, redacted
 *   messages), the first one (`run.started`) with the machine's input, so a reader replays the run through the
 *   machine itself instead of re-deriving its counters. What a `transition` means is unchanged; a version 1 trace
 *   has no machine events, so a reader of it can show the states it went through but not replay the counters.
 */
import { z } from 'zod';
import { STOP_REASONS, type StopReason } from '../../machines/types.js';

/**
 * The version of the trace format, written on every `run-start` as `schemaVersion`.
 * @example
 * if (events[0]?.type === 'run-start' && events[0].schemaVersion > TRACE_SCHEMA_VERSION) console.warn('newer trace');
 */
export const TRACE_SCHEMA_VERSION = 2;

const count = z.number().int().min(0);
const tokens = z.number().min(0);
/** A limit, or null when it is switched off (`Infinity` has no JSON form). */
const limit = z.number().nullable();
const base = { runId: z.string(), at: z.number() };
const stopReason = z.enum(STOP_REASONS as readonly [StopReason, ...StopReason[]]);
const runStatus = z.enum(['running', 'succeeded', 'failed', 'needs_human']);
const callUsage = z.object({ inputTokens: tokens, outputTokens: tokens, costUsd: z.number().min(0) });
const usage = callUsage.extend({ modelCalls: count, toolCalls: count });

const toolCallRequest = z.object({ id: z.string(), name: z.string(), arguments: z.string() });
/** A message as a prompt snapshot records it (redacted). */
const message = z.discriminatedUnion('role', [
  z.object({ role: z.literal('system'), content: z.string() }),
  z.object({ role: z.literal('user'), content: z.string() }),
  z.object({
    role: z.literal('assistant'),
    content: z.string().nullable(),
    toolCalls: z.array(toolCallRequest).optional(),
  }),
  z.object({ role: z.literal('tool'), toolCallId: z.string(), content: z.string() }),
]);

const limits = z.object({
  maxSteps: limit,
  maxStepsPerTask: limit,
  maxRetries: limit,
  /** Absent from traces written before transport attempts were counted per call. */
  maxTransportAttempts: limit.optional(),
  maxTransportRetries: limit.optional(),
  deadlineMs: limit,
  maxInputTokens: limit,
  maxOutputTokens: limit,
  maxCostUsd: limit,
  maxParallelTools: limit,
  maxToolCalls: limit,
  maxToolCallsPerReply: limit,
  maxToolResultBytes: limit,
  maxArgumentRepairs: limit,
  modelCallTimeoutMs: limit,
  // Recorded since evaluators got a time bound; older traces have none.
  evaluatorTimeoutMs: limit.optional(),
});

/** The finish reasons of `ModelResponseMetadata`, in the one vocabulary every adapter maps to. */
const finishReason = z.enum(['stop', 'tool_calls', 'length', 'content_filter', 'error', 'other']);

/** What the provider said about one reply; absent from traces written before it was recorded. */
const responseMetadata = z.object({
  id: z.string().optional(),
  model: z.string().optional(),
  finishReason: finishReason.optional(),
  rawFinishReason: z.string().optional(),
});

/** The model's own sampling and length settings, as it reported them (`Model.settings`). */
const modelSettings = z.object({
  temperature: z.number().optional(),
  topP: z.number().optional(),
  maxOutputTokens: z.number().optional(),
  seed: z.number().optional(),
  stopSequences: z.array(z.string()).optional(),
  presencePenalty: z.number().optional(),
  frequencyPenalty: z.number().optional(),
  reasoningEffort: z.string().optional(),
});

const runStart = z.object({
  type: z.literal('run-start'),
  ...base,
  schemaVersion: z.number().int().positive(),
  goalSummary: z.string(),
  tasks: z.array(z.string()),
  /** The loop's name (`name` in the config); absent from traces written before it was recorded. */
  name: z.string().optional(),
  modelId: z.string(),
  /** The model's provider (`Model.provider`, e.g. `openai`), when the model says. */
  provider: z.string().optional(),
  /** Where the model's requests go (`Model.server`), when the model says. */
  server: z.object({ address: z.string(), port: z.number().int().optional() }).optional(),
  /** The model's own settings (`Model.settings`), when the model reports them. */
  settings: modelSettings.optional(),
  /** A short hash of the instructions and the tool specs: two runs with the same value saw the same prompt setup. */
  promptVersion: z.string(),
  limits,
});

const stepStart = z.object({
  type: z.literal('step-start'),
  ...base,
  /** The model decision this call is for (1-based); a retried call repeats its step number. */
  step: count,
  taskId: z.string(),
  /** The estimate the input budget checked before the call. */
  estimatedInputTokens: tokens,
  /** The budget snapshot: what the run had spent before this step, against the limits of `run-start`. */
  usage,
  /** Milliseconds since the run started, against `limits.deadlineMs`. */
  elapsedMs: z.number(),
});

const stepEnd = z.object({
  type: z.literal('step-end'),
  ...base,
  step: count,
  taskId: z.string(),
  modelId: z.string(),
  latencyMs: z.number(),
  inputTokens: tokens,
  outputTokens: tokens,
  /** Of the input tokens, those the provider served from its cache; present when the provider reports it. */
  cachedInputTokens: tokens.optional(),
  /** Of the output tokens, those spent on reasoning; present when the provider reports it (its text never is). */
  reasoningTokens: tokens.optional(),
  costUsd: z.number(),
  decision: z.string(),
  toolCalls: z.array(z.object({ callId: z.string(), name: z.string(), argumentsSummary: z.string() })),
  replySummary: z.string().nullable(),
  /** The response's id, the model that answered and why it stopped, as far as the adapter reported them. */
  metadata: responseMetadata.optional(),
});

const prompt = z.object({
  type: z.literal('prompt'),
  ...base,
  /** The model call this request was sent for, numbered from 1 in the run. */
  call: z.number().int().positive(),
  step: count,
  taskId: z.string(),
  /** The call whose request this one continues; null when it starts afresh (a new task). */
  basedOn: z.number().int().positive().nullable(),
  /** Leading messages of that request this one keeps; context trimming can keep fewer than it had. */
  keep: count,
  /** The messages after those, redacted. */
  added: z.array(message),
  /** Names of the tools offered with this request. */
  tools: z.array(z.string()),
});

const toolEnd = z.object({
  type: z.literal('tool-end'),
  ...base,
  taskId: z.string(),
  /** The step whose reply asked for this call. */
  step: count.optional(),
  callId: z.string(),
  name: z.string(),
  status: z.string(),
  /** A short hash of the result; empty when the call brought no observation (a failure). */
  observationId: z.string(),
  bytes: count,
  truncated: z.boolean(),
  latencyMs: z.number(),
});

/** After each tool round that ran calls: the health of every tool called so far in the run, and the order the next request offers tools in. */
const toolHealth = z.object({
  type: z.literal('tool-health'),
  ...base,
  taskId: z.string(),
  step: count,
  tools: z.array(
    z.object({
      name: z.string(),
      calls: count,
      successes: count,
      failures: count,
      consecutiveFailures: count,
      successRate: z.number().min(0).max(1),
      meanLatencyMs: z.number().min(0),
      /** The ordering weight: the success rate smoothed by one assumed success. */
      weight: z.number().min(0).max(1),
      circuit: z.enum(['closed', 'open', 'half_open']),
    }),
  ),
  /** Tools the next request offers, in order; a tool whose circuit is open is left out. */
  offered: z.array(z.string()),
});

const evaluationEnd = z.object({
  type: z.literal('evaluation-end'),
  ...base,
  taskId: z.string(),
  step: count.optional(),
  passed: z.boolean(),
  reason: z.string(),
  evaluator: z.string().nullable(),
  /** What LLM judges spent on this verdict, priced; null when none ran. */
  usage: callUsage.nullable().optional(),
  /** Judge calls made, failed attempts included. */
  modelCalls: count.optional(),
});

/** A tool call whose arguments were sent back to the model to fix, and what was wrong with them. */
const argumentError = z.object({ callId: z.string(), name: z.string(), error: z.string() });

const retry = z.object({
  type: z.literal('retry'),
  ...base,
  taskId: z.string(),
  step: count,
  /** The retry layer: `transport` (network, 429, 5xx, timeout), `reflection` (evaluator failed), `argument_repair` (invalid tool arguments). */
  layer: z.enum(['transport', 'reflection', 'argument_repair']),
  /** That layer's counter after this retry: per task for reflection and argument repair, per model call for transport (the call's retry number). */
  counter: count,
  /** The backoff before the retry; 0 when it goes again at once. */
  delayMs: z.number().min(0),
  /**
   * `argument_repair` only: the calls of the reply answered with an error instead of run, each with what was
   * wrong (zod's field errors, `order_id: expected an order id like O-100`), redacted and cut to a summary's
   * length; at most the first five. Absent from traces written before it was added.
   */
  argumentErrors: z.array(argumentError).optional(),
});

const noProgress = z.object({
  type: z.literal('no-progress'),
  ...base,
  taskId: z.string(),
  step: count,
  signal: z
    .enum([
      'repeated_tool_call',
      'unchanged_state',
      'same_evaluator_reason',
      'duplicate_observation',
      'plan_stall',
      'same_parse_error',
    ])
    .nullable(),
  /** `nudge`: a note was added to the next request; `stop`: the run stops with `no_progress`. */
  action: z.enum(['nudge', 'stop']),
  detail: z.string(),
});

const transition = z.object({
  type: z.literal('transition'),
  ...base,
  event: z.string(),
  from: z.string(),
  to: z.string(),
});

/** The no-progress thresholds, null for a signal switched off (`Infinity`). */
const thresholds = z.object({
  repeatedToolCall: limit,
  unchangedState: limit,
  sameEvaluatorReason: limit,
  duplicateObservation: limit,
  planStall: limit,
  sameParseError: limit,
});

/** What the machine was started with: a replay starts a fresh machine from it. */
const machineInput = z.object({
  limits,
  noProgress: thresholds,
  tasks: z.array(
    z.object({ id: z.string(), onFailure: z.enum(['stop', 'continue']), evaluated: z.boolean().optional() }),
  ),
});

/**
 * One outcome event the driver sent the machine, just before it took it: `event` is the event itself (its
 * summaries, digests and counts, strings redacted), so sending the recorded events in order to a fresh
 * machine started with `input` reaches every state and counter the run did.
 */
const machineEvent = z.object({
  type: z.literal('machine-event'),
  ...base,
  /** The event as sent; its fields are the machine's event union's, kept whole (unknown ones included) so a replay gets all of them. */
  event: z.looseObject({ type: z.string().min(1), at: z.number() }),
  /** On the run's first event (`run.started`): the machine's input, switched-off limits and signals as null. */
  input: machineInput.optional(),
});

const modelError = z.object({
  type: z.literal('model-error'),
  ...base,
  taskId: z.string(),
  step: count.optional(),
  errorKind: z.string(),
  message: z.string(),
  retryDelayMs: z.number(),
  latencyMs: z.number().optional(),
  /** Tokens and cost the provider reported before the call failed (billed, so counted); absent when it reported none. */
  inputTokens: tokens.optional(),
  outputTokens: tokens.optional(),
  costUsd: z.number().min(0).optional(),
});

/**
 * Live events of a streaming model (`openaiModel({ stream: true })`): a piece of the reply's text, and a tool
 * call as soon as its name is known. They go to `onEvent` only, never to `result.trace`, the file or spans:
 * the `step-end` that follows holds the whole reply. Each is redacted on its own, so a secret split across
 * two deltas is not recognised in them.
 */
const modelDelta = z.object({
  type: z.literal('model-delta'),
  ...base,
  taskId: z.string(),
  step: count,
  text: z.string(),
});
const modelToolCallStart = z.object({
  type: z.literal('model-tool-call-start'),
  ...base,
  taskId: z.string(),
  step: count,
  callId: z.string(),
  name: z.string(),
});

/** A person's decision on a call that waited for approval, as a durable run continued with it. */
const approvalDecided = z.object({
  type: z.literal('approval-decided'),
  ...base,
  callId: z.string(),
  tool: z.string(),
  approved: z.boolean(),
  reason: z.string().nullable(),
});
/** An evaluator asked a person to review the task's output: the run stops with needs_human and `pendingReview`. */
const reviewRequested = z.object({
  type: z.literal('review-requested'),
  ...base,
  taskId: z.string(),
  step: count,
  evaluator: z.string(),
  reason: z.string(),
  outputHash: z.string(),
});
/** A person's decision on an output that waited for review, as a durable run continued with it. */
const reviewDecided = z.object({
  type: z.literal('review-decided'),
  ...base,
  taskId: z.string(),
  outputHash: z.string(),
  accepted: z.boolean(),
  reason: z.string().nullable(),
});
/** A durable run taken up again from its journal (after a crash, an approval or a cancel). */
const runResume = z.object({ type: z.literal('run-resume'), ...base, fromSeq: count, replayedEvents: count });

const contextTrimmed = z.object({
  type: z.literal('context-trimmed'),
  ...base,
  taskId: z.string(),
  strategy: z.enum(['trim', 'summarize']),
  ceilingTokens: z.number(),
  tokensBefore: tokens,
  tokensAfter: tokens,
  messagesSummarized: count,
  resultsDropped: count,
  messagesDropped: count,
  dropped: z.array(z.object({ callId: z.string(), tool: z.string(), observationId: z.string() })),
  summaryUsage: callUsage.nullable(),
  summarySkipped: z.string().nullable(),
});

const warning = z.object({ type: z.literal('warning'), ...base, message: z.string() });

const runEnd = z.object({
  type: z.literal('run-end'),
  ...base,
  status: runStatus,
  stopReason,
  detail: z.string(),
  usage,
  steps: count,
});

/**
 * Every trace event, by its `type`. Unknown fields are dropped when parsing, so a file written by a newer
 * version with added fields still reads.
 * @example
 * const parsed = traceEventSchema.safeParse(JSON.parse(line));
 * if (parsed.success && parsed.data.type === 'run-end') console.log(parsed.data.stopReason);
 */
export const traceEventSchema = z.discriminatedUnion('type', [
  runStart,
  stepStart,
  stepEnd,
  prompt,
  toolEnd,
  toolHealth,
  evaluationEnd,
  retry,
  noProgress,
  transition,
  modelError,
  modelDelta,
  modelToolCallStart,
  contextTrimmed,
  warning,
  approvalDecided,
  reviewRequested,
  reviewDecided,
  runResume,
  runEnd,
  machineEvent,
]);

/**
 * One trace record; a run's trace rebuilds what happened and why it stopped: inputs in summary,
 * model and prompt version, tool choices with argument summaries, observation ids, state changes,
 * tokens, cost, latency, retries, verdicts and the stop reason. No private reasoning text; secrets redacted.
 * @example
 * const toolCalls = result.trace.filter((event) => event.type === 'tool-end');
 */
export type TraceEvent = z.output<typeof traceEventSchema>;

/**
 * The `type` of a trace event.
 * @example
 * const type: TraceEventType = 'step-end';
 */
export type TraceEventType = TraceEvent['type'];

/**
 * One call an argument repair sends back to the model, as the `retry` event names it.
 * @example
 * const error: TracedArgumentError = { callId: 'c1', name: 'get_order_status', error: 'order_id: expected an order id like O-100' };
 */
export type TracedArgumentError = z.output<typeof argumentError>;

/**
 * A message as a prompt snapshot holds it (redacted).
 * @example
 * const message: TracedMessage = { role: 'tool', toolCallId: 'c1', content: '{"status":"shipped"}' };
 */
export type TracedMessage = z.output<typeof message>;

/**
 * The machine's input as the first `machine-event` records it: limits and thresholds switched off are null.
 * @example
 * const taskIds = (input: TracedMachineInput) => input.tasks.map((task) => task.id);
 */
export type TracedMachineInput = z.output<typeof machineInput>;

/**
 * The limits as `run-start` records them: null for a limit switched off (`Infinity`).
 * @example
 * const noDeadline = (limits: TracedLimits) => limits.deadlineMs === null;
 */
export type TracedLimits = z.output<typeof limits>;
