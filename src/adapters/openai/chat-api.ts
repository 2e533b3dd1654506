/**
 * The Chat Completions API: our messages and tools as its request, its reply (whole or streamed)
 * as a `ChatOutcome`.
 */
import type OpenAI from 'openai';
import type { ChatCompletionCreateParamsBase, ChatCompletionMessageParam } from 'openai/resources/chat/completions';
import { ModelCallError } from '../../contracts/errors.js';
import type { Message, ModelProgress, ModelSettings, ModelUsage, ToolSpec } from '../../contracts/model.js';
import type { OpenAIResponseFormat } from './json-schema-format.js';
import { ChatStreamAccumulator, type ChatChunk, type ChatOutcome, type ChatUsage } from './stream-accumulator.js';

/** One reply of either API, before it becomes a `ModelResponse`. */
export interface ApiOutcome {
  text: string | null;
  refusal: string | null;
  toolCalls: { id: string; name: string; arguments: string }[];
  /** Normalised over both APIs: `stop`, `length`, `tool_calls`, `content_filter`, or what the server said. */
  finishReason: string | null;
  /** Null when the server reported none (some local servers). */
  usage: ModelUsage | null;
  /** The response's id and the model that answered, when the server said (null otherwise). */
  id: string | null;
  model: string | null;
}

const count = (value: unknown): number | undefined =>
  typeof value === 'number' && Number.isSafeInteger(value) && value >= 0 ? value : undefined;

/** Usage with its optional parts only when reported; null when the counts are missing or garbled. */
export function toModelUsage(input: unknown, output: unknown, cached: unknown, reasoning: unknown): ModelUsage | null {
  const inputTokens = count(input),
    outputTokens = count(output);
  if (inputTokens === undefined || outputTokens === undefined) return null;
  const cachedInputTokens = count(cached),
    reasoningTokens = count(reasoning);
  return {
    inputTokens,
    outputTokens,
    ...(cachedInputTokens === undefined ? {} : { cachedInputTokens }),
    ...(reasoningTokens === undefined ? {} : { reasoningTokens }),
  };
}

const chatUsage = (usage: ChatUsage | null): ModelUsage | null =>
  usage === null
    ? null
    : toModelUsage(
        usage.prompt_tokens,
        usage.completion_tokens,
        usage.prompt_tokens_details?.cached_tokens,
        usage.completion_tokens_details?.reasoning_tokens,
      );

const fromChat = (outcome: ChatOutcome, where: string): ApiOutcome => {
  checkToolCalls(outcome.toolCalls, where, 'choices[0].message.tool_calls', 'function.name');
  return { ...outcome, usage: chatUsage(outcome.usage) };
};

/**
 * A tool call without a name cannot be run or answered: the reply is malformed, and the error names
 * the field. Empty arguments are the model's to repair (the loop tells it), not the server's fault.
 */
export function checkToolCalls(calls: ApiOutcome['toolCalls'], where: string, path: string, nameField: string): void {
  const index = calls.findIndex((call) => call.name === '');
  if (index >= 0)
    throw new ModelCallError({
      kind: 'unknown',
      message: `${where} sent a malformed reply: ${path}[${index}].${nameField} is missing`,
    });
}

export interface ApiCall {
  client: OpenAI;
  model: string;
  messages: readonly Message[];
  tools: readonly ToolSpec[];
  settings: ModelSettings;
  format: OpenAIResponseFormat | null;
  stream: boolean;
  signal: AbortSignal;
  /** OpenAI itself wants `max_completion_tokens`; OpenAI-compatible servers mostly know only `max_tokens`. */
  hostedByOpenAI: boolean;
  /** Called on every streamed event, so the idle timer sees parsed progress too. */
  touch: () => void;
  progress: (progress: ModelProgress) => void;
  /** Names the server in messages about malformed replies. */
  where: string;
  /** The reply's content type once its headers came: tells a stream cut short from no stream at all. */
  contentType: () => string | null;
  /** Hears the usage a stream reported, even when the call fails after it: the server billed it. */
  reportUsage: (usage: ModelUsage) => void;
  /** Takes the credentials out of server text, before it is cut to a quote (a cut could keep half a secret). */
  scrub: (text: string) => string;
}

/**
 * A streamed reply that ended early: cut short (transient), or never a stream at all because the server
 * ignores `stream: true` and answers whole (fatal: every attempt would end the same).
 */
export function incompleteStream(call: ApiCall, missing: string): ModelCallError {
  const type = call.contentType();
  if (type !== null && !type.includes('text/event-stream')) {
    return new ModelCallError({
      kind: 'unknown',
      message: `${call.where} answered a streamed request with ${type || 'no content type'}, not text/event-stream; this server does not stream: set stream: false`,
    });
  }
  return new ModelCallError({
    kind: 'connection',
    message: `${call.where} ended its streamed reply before it was complete (${missing})`,
  });
}

function chatMessage(message: Message): ChatCompletionMessageParam {
  switch (message.role) {
    case 'system':
    case 'user':
      return { role: message.role, content: message.content };
    case 'tool':
      return { role: 'tool', tool_call_id: message.toolCallId, content: message.content };
    case 'assistant':
      return {
        role: 'assistant',
        content: message.content,
        ...(message.toolCalls && message.toolCalls.length > 0
          ? {
              tool_calls: message.toolCalls.map((call) => ({
                id: call.id,
                type: 'function' as const,
                function: { name: call.name, arguments: call.arguments },
              })),
            }
          : {}),
      };
  }
}

/** Settings as Chat Completions names them; `undefined` ones are left out, so the server's default holds. */
function chatSettings(settings: ModelSettings, hostedByOpenAI: boolean): Partial<ChatCompletionCreateParamsBase> {
  const out: Partial<ChatCompletionCreateParamsBase> = {};
  if (settings.temperature !== undefined) out.temperature = settings.temperature;
  if (settings.topP !== undefined) out.top_p = settings.topP;
  if (settings.maxOutputTokens !== undefined) {
    if (hostedByOpenAI) out.max_completion_tokens = settings.maxOutputTokens;
    else out.max_tokens = settings.maxOutputTokens;
  }
  if (settings.seed !== undefined) out.seed = settings.seed;
  if (settings.stopSequences !== undefined) out.stop = [...settings.stopSequences];
  if (settings.presencePenalty !== undefined) out.presence_penalty = settings.presencePenalty;
  if (settings.frequencyPenalty !== undefined) out.frequency_penalty = settings.frequencyPenalty;
  if (settings.reasoningEffort !== undefined) out.reasoning_effort = settings.reasoningEffort;
  return out;
}

export function chatBody(call: ApiCall): ChatCompletionCreateParamsBase {
  return {
    model: call.model,
    messages: call.messages.map(chatMessage),
    ...(call.tools.length > 0
      ? {
          tools: call.tools.map((tool) => ({
            type: 'function' as const,
            function: { name: tool.name, description: tool.description, parameters: tool.parameters },
          })),
        }
      : {}),
    ...(call.format === null
      ? {}
      : {
          response_format: {
            type: 'json_schema' as const,
            json_schema: { name: call.format.name, schema: call.format.schema, strict: call.format.strict },
          },
        }),
    ...chatSettings(call.settings, call.hostedByOpenAI),
  };
}

/** Of a text reply, this much is scrubbed and then quoted from: room for secrets that start inside the quote. */
const QUOTE_SCAN_CHARS = 4096;

/** A reply that is not a chat completion (an HTML page, a bare string) names what came instead. */
export function notAReply(call: Pick<ApiCall, 'where' | 'scrub'>, value: unknown, expected: string): ModelCallError {
  const where = call.where;
  const shown =
    typeof value === 'string'
      ? `text starting ${JSON.stringify(call.scrub(value.slice(0, QUOTE_SCAN_CHARS)).slice(0, 60))}`
      : value === null
        ? 'null'
        : typeof value;
  const html = typeof value === 'string' && /^\s*<(!doctype|html)/i.test(value);
  return new ModelCallError({
    kind: 'unknown',
    message: `${where} answered 200 with ${html ? 'an HTML page' : shown} instead of ${expected}; is baseURL the API's address (it usually ends in /v1)?`,
  });
}

export async function callChat(call: ApiCall): Promise<ApiOutcome> {
  const body = chatBody(call);
  if (!call.stream) {
    const completion: unknown = await call.client.chat.completions.create(
      { ...body, stream: false },
      { signal: call.signal },
    );
    return fromChat(completionOutcome(completion, call), call.where);
  }
  const stream = await call.client.chat.completions.create(
    { ...body, stream: true, stream_options: { include_usage: true } },
    { signal: call.signal },
  );
  const accumulator = new ChatStreamAccumulator(call.progress);
  try {
    for await (const chunk of stream as AsyncIterable<ChatChunk>) {
      call.touch();
      accumulator.add(chunk);
    }
  } finally {
    const usage = chatUsage(accumulator.outcome().usage);
    if (usage !== null) call.reportUsage(usage);
  }
  // The client ends the iteration quietly when it is aborted: our abort is the caller's to report.
  call.signal.throwIfAborted();
  if (!accumulator.finished) throw incompleteStream(call, 'no finish_reason, no [DONE]');
  return fromChat(accumulator.outcome(), call.where);
}

/** A field that should be a string; anything else counts as missing. */
export const textOf = (value: unknown): string => (typeof value === 'string' ? value : '');

/** A field that should be a non-empty string, or null. */
export const nonEmptyText = (value: unknown): string | null =>
  typeof value === 'string' && value !== '' ? value : null;

function completionOutcome(completion: unknown, call: ApiCall): ChatOutcome {
  const where = call.where;
  const choices = (completion as { choices?: unknown } | null)?.choices;
  if (typeof completion !== 'object' || completion === null || !Array.isArray(choices))
    throw notAReply(call, completion, 'a chat completion');
  const choice = choices[0] as
    { message?: { content?: unknown; refusal?: unknown; tool_calls?: unknown }; finish_reason?: unknown } | undefined;
  if (choice === undefined)
    throw new ModelCallError({ kind: 'unknown', message: `${where} answered a chat completion without choices` });
  const message = choice.message ?? {};
  const toolCalls = Array.isArray(message.tool_calls)
    ? (message.tool_calls as { id?: unknown; type?: unknown; function?: { name?: unknown; arguments?: unknown } }[])
    : [];
  return {
    text: typeof message.content === 'string' ? message.content : null,
    refusal: typeof message.refusal === 'string' ? message.refusal : null,
    toolCalls: toolCalls
      .filter((toolCall) => toolCall.type === undefined || toolCall.type === 'function')
      .map((toolCall) => ({
        id: textOf(toolCall.id),
        name: textOf(toolCall.function?.name),
        arguments: textOf(toolCall.function?.arguments),
      })),
    finishReason: typeof choice.finish_reason === 'string' ? choice.finish_reason : null,
    usage: (completion as { usage?: ChatOutcome['usage'] }).usage ?? null,
    id: nonEmptyText((completion as { id?: unknown }).id),
    model: nonEmptyText((completion as { model?: unknown }).model),
  };
}
