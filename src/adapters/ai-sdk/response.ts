/**
 * An AI SDK result as a loopstate `ModelResponse`: text, tool calls with their arguments as JSON text, usage
 * in loopstate's terms (every input token counted, cached ones included; every output token, reasoning ones
 * included) from either specification's usage shape, and the response metadata. A content-filtered reply is
 * a `refused` error. Streamed and unstreamed replies end here, so they end the same.
 */
import type { LanguageModelV2Usage, LanguageModelV3Usage } from '@ai-sdk/provider';
import { ModelCallError } from '../../contracts/errors.js';
import type {
  Message,
  ModelFinishReason,
  ModelResponse,
  ModelResponseMetadata,
  ModelUsage,
  ToolCallRequest,
  ToolSpec,
} from '../../contracts/model.js';
import { CHARS_PER_TOKEN_ESTIMATE } from '../../engine/constants.js';

/** What a reply is made of, whichever way it arrived. */
export interface ReplyParts {
  /** Text parts in order; null when the reply had none. */
  text: string | null;
  toolCalls: ToolCallRequest[];
  /** The finish reason as the specification gives it: a V2 string, or V3's `{ unified, raw }`. */
  finishReason: unknown;
  /** The specification's usage object; null when none came (a stream cut before `finish`). */
  usage: unknown;
  responseId?: string | undefined;
  responseModel?: string | undefined;
}

const count = (value: unknown): number | undefined =>
  typeof value === 'number' && Number.isFinite(value) && value >= 0 ? value : undefined;

/**
 * Usage in loopstate's terms; null when the provider reported no token counts at all.
 * V3 splits the counts (`inputTokens.total` includes cache reads and writes; `outputTokens.total` includes
 * reasoning). V2 has flat counts whose meaning varies by provider: Anthropic's `inputTokens` leaves the
 * cache reads out (its API does), the others include them; so the cache reads are added for Anthropic only.
 * @example
 * usageOf({ inputTokens: { total: 120, noCache: 20, cacheRead: 100, cacheWrite: 0 }, outputTokens: { total: 30, text: 20, reasoning: 10 } }, 'anthropic.messages')
 * // { inputTokens: 120, outputTokens: 30, cachedInputTokens: 100, reasoningTokens: 10 }
 */
export function usageOf(usage: unknown, provider: string): ModelUsage | null {
  if (typeof usage !== 'object' || usage === null) return null;
  const { inputTokens, outputTokens } = usage as { inputTokens?: unknown; outputTokens?: unknown };
  if (typeof inputTokens === 'object' || typeof outputTokens === 'object') {
    const input = (inputTokens ?? {}) as Partial<LanguageModelV3Usage['inputTokens']>;
    const output = (outputTokens ?? {}) as Partial<LanguageModelV3Usage['outputTokens']>;
    const inputParts = [count(input.noCache), count(input.cacheRead), count(input.cacheWrite)];
    const inputTotal =
      count(input.total) ??
      (inputParts.some((part) => part !== undefined)
        ? inputParts.reduce<number>((sum, part) => sum + (part ?? 0), 0)
        : undefined);
    const outputTotal =
      count(output.total) ??
      (count(output.text) === undefined && count(output.reasoning) === undefined
        ? undefined
        : (count(output.text) ?? 0) + (count(output.reasoning) ?? 0));
    if (inputTotal === undefined && outputTotal === undefined) return null;
    return withDetails(inputTotal ?? 0, outputTotal ?? 0, count(input.cacheRead), count(output.reasoning));
  }
  const flat = usage as Partial<LanguageModelV2Usage>;
  const input = count(flat.inputTokens);
  const output = count(flat.outputTokens);
  if (input === undefined && output === undefined) return null;
  const cached = count(flat.cachedInputTokens);
  const cacheExcluded = provider.split('.').includes('anthropic');
  return withDetails(
    (input ?? 0) + (cacheExcluded ? (cached ?? 0) : 0),
    output ?? 0,
    cached,
    count(flat.reasoningTokens),
  );
}

function withDetails(
  inputTokens: number,
  outputTokens: number,
  cached: number | undefined,
  reasoning: number | undefined,
): ModelUsage {
  return {
    inputTokens,
    outputTokens,
    ...(cached === undefined || cached === 0 ? {} : { cachedInputTokens: Math.min(cached, inputTokens) }),
    ...(reasoning === undefined || reasoning === 0 ? {} : { reasoningTokens: Math.min(reasoning, outputTokens) }),
  };
}

/** Token counts from characters when a provider reports none, so budgets still see the spend. */
export function estimatedUsage(
  messages: readonly Message[],
  tools: readonly ToolSpec[],
  parts: Pick<ReplyParts, 'text' | 'toolCalls'>,
): ModelUsage {
  const inputChars = JSON.stringify(messages).length + JSON.stringify(tools).length;
  const outputChars =
    (parts.text ?? '').length +
    parts.toolCalls.reduce((sum, call) => sum + call.name.length + call.arguments.length, 0);
  return {
    inputTokens: Math.ceil(inputChars / CHARS_PER_TOKEN_ESTIMATE),
    outputTokens: Math.ceil(outputChars / CHARS_PER_TOKEN_ESTIMATE),
  };
}

const FINISH_REASONS: Readonly<Record<string, ModelFinishReason>> = {
  stop: 'stop',
  'tool-calls': 'tool_calls',
  length: 'length',
  'content-filter': 'content_filter',
  error: 'error',
  other: 'other',
  unknown: 'other',
};

/**
 * The finish reason in loopstate's vocabulary, with the provider's own word (V3's `raw`) beside it.
 * @example
 * finishReasonOf({ unified: 'length', raw: 'max_tokens' }) // { finishReason: 'length', rawFinishReason: 'max_tokens' }
 */
export function finishReasonOf(value: unknown): Pick<ModelResponseMetadata, 'finishReason' | 'rawFinishReason'> {
  const unified =
    typeof value === 'string'
      ? value
      : typeof value === 'object' && value !== null
        ? (value as { unified?: unknown }).unified
        : undefined;
  const raw =
    typeof value === 'object' && value !== null
      ? (value as { raw?: unknown }).raw
      : unified === 'unknown'
        ? unified
        : undefined;
  const finishReason =
    typeof unified === 'string' && Object.hasOwn(FINISH_REASONS, unified) ? FINISH_REASONS[unified] : undefined;
  return {
    ...(finishReason === undefined ? {} : { finishReason }),
    ...(typeof raw === 'string' && raw !== '' ? { rawFinishReason: raw } : {}),
  };
}

/** A tool call's input as loopstate keeps it: JSON text, `{}` for a call with no arguments. */
export const argumentsOf = (input: unknown): string =>
  typeof input === 'string' ? (input.trim() === '' ? '{}' : input) : JSON.stringify(input ?? {});

export interface ResponseContext {
  messages: readonly Message[];
  tools: readonly ToolSpec[];
  provider: string;
  where: string;
}

/**
 * The reply as a `ModelResponse`, or the `refused` error of a content-filtered one.
 * @example
 * const response = toModelResponse({ text: 'ok', toolCalls: [], finishReason: 'stop', usage }, context);
 */
export function toModelResponse(parts: ReplyParts, context: ResponseContext): ModelResponse {
  const reported = usageOf(parts.usage, context.provider);
  const finish = finishReasonOf(parts.finishReason);
  if (finish.finishReason === 'content_filter') {
    throw new ModelCallError({
      kind: 'refused',
      message: `${context.where} withheld the reply: its content filter stopped it (finish reason ${finish.rawFinishReason ?? 'content-filter'})`,
      ...(reported === null ? {} : { usage: reported }),
    });
  }
  const metadata: ModelResponseMetadata = {
    ...(parts.responseId === undefined ? {} : { id: parts.responseId }),
    ...(parts.responseModel === undefined ? {} : { model: parts.responseModel }),
    ...finish,
  };
  return {
    text: parts.text,
    toolCalls: parts.toolCalls,
    usage: reported ?? estimatedUsage(context.messages, context.tools, parts),
    ...(Object.keys(metadata).length === 0 ? {} : { metadata }),
  };
}

/** The content of an unstreamed result as reply parts (provider-executed tool calls are the provider's own). */
export function partsOfContent(content: unknown): Pick<ReplyParts, 'text' | 'toolCalls'> {
  const texts: string[] = [];
  const toolCalls: ToolCallRequest[] = [];
  for (const part of Array.isArray(content) ? (content as unknown[]) : []) {
    if (typeof part !== 'object' || part === null) continue;
    const typed = part as {
      type?: unknown;
      text?: unknown;
      toolCallId?: unknown;
      toolName?: unknown;
      input?: unknown;
      providerExecuted?: unknown;
    };
    if (typed.type === 'text' && typeof typed.text === 'string') texts.push(typed.text);
    else if (
      typed.type === 'tool-call' &&
      typed.providerExecuted !== true &&
      typeof typed.toolCallId === 'string' &&
      typeof typed.toolName === 'string'
    )
      toolCalls.push({ id: typed.toolCallId, name: typed.toolName, arguments: argumentsOf(typed.input) });
  }
  return { text: texts.length === 0 ? null : texts.join(''), toolCalls };
}

/** The response id and model of a result's `response` metadata (or a stream's `response-metadata` part). */
export function responseIdentity(response: unknown): Pick<ReplyParts, 'responseId' | 'responseModel'> {
  if (typeof response !== 'object' || response === null) return {};
  const { id, modelId } = response as { id?: unknown; modelId?: unknown };
  return {
    ...(typeof id === 'string' && id !== '' ? { responseId: id } : {}),
    ...(typeof modelId === 'string' && modelId !== '' ? { responseModel: modelId } : {}),
  };
}
