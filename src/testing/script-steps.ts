/**
 * Builders of scripted model steps: one step answers one model call. Steps are
 * plain data so a test can read its script; tool call ids are filled in when a step is played.
 */
import { LoopstateError, type ModelErrorKind } from '../contracts/errors.js';
import type { ModelRequest, ModelResponseMetadata, ModelUsage } from '../contracts/model.js';

/**
 * Usage every scripted step reports unless it sets its own: small, fixed, so cost budgets are exercised offline.
 * @example
 * reply('done') // reports { inputTokens: 100, outputTokens: 20 }
 */
export const DEFAULT_SCRIPTED_USAGE: Readonly<ModelUsage> = Object.freeze({ inputTokens: 100, outputTokens: 20 });

/**
 * A tool call as a scripted step holds it; `id` is null until played (then `call_<step>_<index>`).
 * @example
 * const call: ScriptedToolCallData = { id: null, name: 'get_order', arguments: '{"order_id":"O-1"}' };
 */
export interface ScriptedToolCallData {
  id: string | null;
  name: string;
  /** Raw argument text as the model would send it; may be malformed on purpose. */
  arguments: string;
}

/**
 * A scripted successful response (text and/or tool calls, with usage).
 * @example
 * const step: ScriptedResponse = { type: 'response', text: 'hi', toolCalls: [], usage: { inputTokens: 1, outputTokens: 1 } };
 */
export interface ScriptedResponse {
  type: 'response';
  text: string | null;
  toolCalls: readonly ScriptedToolCallData[];
  usage: ModelUsage;
  /** What the reply says about itself (id, model, finish reason), when the step sets it. */
  metadata?: ModelResponseMetadata;
}

/**
 * A scripted failed call, thrown as `ModelCallError` when played.
 * @example
 * const step: ScriptedFailure = { type: 'error', kind: 'rate_limited', status: 429, retryAfterMs: 50, message: 'slow down' };
 */
export interface ScriptedFailure {
  type: 'error';
  kind: ModelErrorKind;
  status?: number;
  retryAfterMs?: number;
  message: string;
}

/**
 * What one scripted step produces: a response, or a model failure thrown as `ModelCallError`.
 * @example
 * const steps: ScriptStepResult[] = [reply('hi'), modelError({ kind: 'timeout' })];
 */
export type ScriptStepResult = ScriptedResponse | ScriptedFailure;

/**
 * A step of the script: fixed data, or a function of the request for dynamic tests (it may also
 * throw any error, or return a promise).
 * @example
 * const echoLastTool: ScriptStep = (request) => reply(request.messages.at(-1)?.role === 'tool' ? 'got it' : 'nothing yet');
 */
export type ScriptStep = ScriptStepResult | ((request: ModelRequest) => ScriptStepResult | Promise<ScriptStepResult>);

/**
 * Usage override of a step (missing counts come from `DEFAULT_SCRIPTED_USAGE`) and the reply's
 * metadata, e.g. a finish reason of `length` for a reply the output limit cut.
 * @example
 * const options: StepUsageOptions = { usage: { outputTokens: 5_000 }, metadata: { finishReason: 'length' } };
 */
export interface StepUsageOptions {
  usage?: Partial<ModelUsage>;
  metadata?: ModelResponseMetadata;
}

/** The step's metadata, copied, when it has any. */
const metadataOf = (options: StepUsageOptions): { metadata?: ModelResponseMetadata } =>
  options.metadata === undefined ? {} : { metadata: { ...options.metadata } };

/**
 * One call of a parallel `toolCall([...])` step; `args` is an object (sent as JSON) or raw text.
 * @example
 * const call: ScriptedToolCall = { name: 'search', args: '{"q": "unterminated' };
 */
export interface ScriptedToolCall {
  name: string;
  args: object | string;
  id?: string;
}

/**
 * A final text reply.
 * @example
 * scriptedModel([reply('{"status":"shipped"}', { usage: { inputTokens: 120, outputTokens: 30 } })])
 */
export function reply(text: string, options: StepUsageOptions = {}): ScriptedResponse {
  if (typeof text !== 'string')
    throw invalidScript('reply(text) needs a string; use emptyReply() for a reply without text');
  return { type: 'response', text, toolCalls: [], usage: resolveUsage(options.usage), ...metadataOf(options) };
}

/**
 * A reply with neither text nor tool calls, for bad-output tests.
 * @example
 * scriptedModel([emptyReply(), reply('now with text')])
 */
export function emptyReply(options: StepUsageOptions = {}): ScriptedResponse {
  return { type: 'response', text: null, toolCalls: [], usage: resolveUsage(options.usage), ...metadataOf(options) };
}

/**
 * A reply that requests one tool call, or several in parallel. Object arguments are sent as
 * JSON; a string is sent verbatim, so a test can send malformed JSON.
 * @example
 * toolCall('get_order_status', { order_id: 'O-101' })
 * toolCall('get_order_status', '{"order_id": ')              // malformed arguments
 * toolCall([{ name: 'a', args: {} }, { name: 'b', args: {} }]) // parallel calls
 * toolCall('search', '{"q": "ref', { metadata: { finishReason: 'length' } }) // cut at the output limit
 */
export function toolCall(
  name: string,
  args: object | string,
  options?: StepUsageOptions & { id?: string; text?: string },
): ScriptedResponse;
export function toolCall(
  calls: readonly ScriptedToolCall[],
  options?: StepUsageOptions & { text?: string },
): ScriptedResponse;
export function toolCall(
  nameOrCalls: string | readonly ScriptedToolCall[],
  argsOrOptions?: object | string,
  maybeOptions?: StepUsageOptions & { id?: string; text?: string },
): ScriptedResponse {
  const single = typeof nameOrCalls === 'string';
  const calls: readonly ScriptedToolCall[] = single
    ? [
        {
          name: nameOrCalls,
          args: argsOrOptions ?? {},
          ...(maybeOptions?.id === undefined ? {} : { id: maybeOptions.id }),
        },
      ]
    : nameOrCalls;
  const options = (single ? maybeOptions : (argsOrOptions as (StepUsageOptions & { text?: string }) | undefined)) ?? {};
  if (!Array.isArray(calls) || calls.length === 0) {
    throw invalidScript('toolCall([...]) needs at least one call; use emptyReply() for a reply without tool calls');
  }
  const toolCalls = calls.map((call, index): ScriptedToolCallData => {
    if (typeof call.name !== 'string' || call.name === '')
      throw invalidScript(`toolCall: call ${index} needs a non-empty name`);
    return {
      id: call.id ?? null,
      name: call.name,
      arguments: typeof call.args === 'string' ? call.args : JSON.stringify(call.args),
    };
  });
  return {
    type: 'response',
    text: options.text ?? null,
    toolCalls,
    usage: resolveUsage(options.usage),
    ...metadataOf(options),
  };
}

/**
 * Options of `modelError`: an HTTP status (its kind is derived) or a kind; `kind` wins when both are set.
 * @example
 * const options: ModelErrorStepOptions = { status: 503, message: 'upstream overloaded' };
 */
export type ModelErrorStepOptions =
  | { status: number; kind?: ModelErrorKind; retryAfterMs?: number; message?: string }
  | { kind: ModelErrorKind; status?: number; retryAfterMs?: number; message?: string };

/**
 * A failed model call, thrown as `ModelCallError`. Statuses map to kinds like a provider adapter
 * does: 429 → `rate_limited`, 5xx → `server`, 401/403 → `auth`, 408 → `timeout`, other 4xx →
 * `bad_request`.
 * @example
 * modelError({ status: 429, retryAfterMs: 50 })
 * modelError({ kind: 'timeout' })
 */
export function modelError(options: ModelErrorStepOptions): ScriptedFailure {
  const { status, retryAfterMs } = options;
  if (status !== undefined && !(Number.isInteger(status) && status >= 100 && status <= 599)) {
    throw invalidScript(`modelError: status must be an HTTP status code (100-599), got ${String(status)}`);
  }
  if (retryAfterMs !== undefined && !(Number.isFinite(retryAfterMs) && retryAfterMs >= 0)) {
    throw invalidScript(`modelError: retryAfterMs must be a finite number >= 0, got ${String(retryAfterMs)}`);
  }
  const kind = options.kind ?? modelErrorKindForStatus(status);
  const statusText = status === undefined ? '' : `HTTP ${status} `;
  return {
    type: 'error',
    kind,
    ...(status === undefined ? {} : { status }),
    ...(retryAfterMs === undefined ? {} : { retryAfterMs }),
    message: options.message ?? `scripted model error: ${statusText}(${kind})`,
  };
}

/**
 * The error kind a provider adapter reports for an HTTP status.
 * @example
 * modelErrorKindForStatus(503) // 'server'
 */
export function modelErrorKindForStatus(status: number | undefined): ModelErrorKind {
  if (status === undefined) return 'unknown';
  if (status === 429) return 'rate_limited';
  if (status === 401 || status === 403) return 'auth';
  if (status === 408) return 'timeout';
  if (status >= 500 && status <= 599) return 'server';
  if (status >= 400 && status <= 499) return 'bad_request';
  return 'unknown';
}

function resolveUsage(usage: Partial<ModelUsage> | undefined): ModelUsage {
  // An explicit `undefined` count means "not set", not "zero".
  const resolved: ModelUsage = {
    inputTokens: usage?.inputTokens ?? DEFAULT_SCRIPTED_USAGE.inputTokens,
    outputTokens: usage?.outputTokens ?? DEFAULT_SCRIPTED_USAGE.outputTokens,
    // The detail counts only when the step sets them, as a provider reports them only when it knows.
    ...(usage?.cachedInputTokens === undefined ? {} : { cachedInputTokens: usage.cachedInputTokens }),
    ...(usage?.reasoningTokens === undefined ? {} : { reasoningTokens: usage.reasoningTokens }),
  };
  for (const [field, count] of Object.entries(resolved)) {
    if (!(Number.isInteger(count) && count >= 0))
      throw invalidScript(`usage.${field} must be an integer >= 0, got ${String(count)}`);
  }
  return resolved;
}

/**
 * The error a malformed script raises when it is built or played.
 * @example
 * throw invalidScript('toolCall([...]) needs at least one call');
 */
export function invalidScript(message: string): LoopstateError {
  return new LoopstateError({ code: 'invalid_script', message });
}
