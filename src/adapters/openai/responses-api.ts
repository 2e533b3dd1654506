/**
 * The Responses API: the transcript as input items (messages, function calls and their outputs),
 * never stored server-side (`store: false`: the loop holds the conversation), and its reply, whole or
 * streamed, as an `ApiOutcome`. A streamed reply ends with `response.completed`, which carries the same
 * response object a non-streamed call returns, so both end identically.
 */
import type { ResponseCreateParamsBase, ResponseInputItem } from 'openai/resources/responses/responses';
import { ModelCallError } from '../../contracts/errors.js';
import type { Message, ModelSettings, ModelUsage } from '../../contracts/model.js';
import { clause } from './classify-error.js';
import {
  checkToolCalls,
  incompleteStream,
  nonEmptyText,
  notAReply,
  textOf,
  toModelUsage,
  type ApiCall,
  type ApiOutcome,
} from './chat-api.js';

function inputItems(messages: readonly Message[]): ResponseInputItem[] {
  const items: ResponseInputItem[] = [];
  for (const message of messages) {
    switch (message.role) {
      case 'system':
      case 'user':
        items.push({ type: 'message', role: message.role, content: message.content });
        break;
      case 'assistant':
        if (message.content !== null && message.content !== '')
          items.push({ type: 'message', role: 'assistant', content: message.content });
        for (const call of message.toolCalls ?? [])
          items.push({ type: 'function_call', call_id: call.id, name: call.name, arguments: call.arguments });
        break;
      case 'tool':
        items.push({ type: 'function_call_output', call_id: message.toolCallId, output: message.content });
        break;
    }
  }
  return items;
}

function responsesSettings(settings: ModelSettings): Partial<ResponseCreateParamsBase> {
  const out: Partial<ResponseCreateParamsBase> = {};
  if (settings.temperature !== undefined) out.temperature = settings.temperature;
  if (settings.topP !== undefined) out.top_p = settings.topP;
  if (settings.maxOutputTokens !== undefined) out.max_output_tokens = settings.maxOutputTokens;
  if (settings.reasoningEffort !== undefined) out.reasoning = { effort: settings.reasoningEffort };
  // The Responses API has no seed, stop sequences or penalties: they are not sent.
  return out;
}

export function responsesBody(call: ApiCall): ResponseCreateParamsBase {
  return {
    model: call.model,
    input: inputItems(call.messages),
    store: false,
    ...(call.tools.length > 0
      ? {
          tools: call.tools.map((tool) => ({
            type: 'function' as const,
            name: tool.name,
            description: tool.description,
            parameters: tool.parameters,
            strict: false,
          })),
        }
      : {}),
    ...(call.format === null
      ? {}
      : {
          text: {
            format: {
              type: 'json_schema' as const,
              name: call.format.name,
              schema: call.format.schema,
              strict: call.format.strict,
            },
          },
        }),
    ...responsesSettings(call.settings),
  };
}

interface StreamEvent {
  type?: string;
  delta?: unknown;
  item?: { type?: string; call_id?: string; name?: string };
  response?: unknown;
  message?: unknown;
  code?: unknown;
}

export async function callResponses(call: ApiCall): Promise<ApiOutcome> {
  const body = responsesBody(call);
  if (!call.stream) {
    // The plain POST, not `responses.create`: its post-processing throws a TypeError on a reply that is
    // text (an HTML page), which would pass for a dropped connection and be retried.
    const response: unknown = await call.client.post('/responses', {
      body: { ...body, stream: false },
      signal: call.signal,
    });
    return responseOutcome(response, call);
  }
  const stream = await call.client.responses.create({ ...body, stream: true }, { signal: call.signal });
  let final: unknown;
  for await (const event of stream as AsyncIterable<StreamEvent>) {
    call.touch();
    if (event.type === 'response.output_text.delta' && typeof event.delta === 'string' && event.delta !== '') {
      call.progress({ type: 'text_delta', text: event.delta });
    } else if (event.type === 'response.output_item.added' && event.item?.type === 'function_call') {
      call.progress({ type: 'tool_call_started', callId: event.item.call_id ?? '', name: event.item.name ?? '' });
    } else if (event.type === 'response.completed' || event.type === 'response.incomplete') {
      final = event.response;
      // The reply is whole: a server that keeps the connection open must not idle the call out.
      break;
    } else if (event.type === 'response.failed') {
      const failed = event.response as { error?: { code?: unknown; message?: unknown }; usage?: unknown } | undefined;
      const usage = responseUsage(failed?.usage);
      if (usage !== null) call.reportUsage(usage);
      throw new ModelCallError({
        kind: 'server',
        message: `${call.where} failed the response mid-stream: ${reasonOf(failed?.error?.message, failed?.error?.code)}`,
      });
    } else if (event.type === 'error') {
      throw new ModelCallError({
        kind: 'server',
        message: `${call.where} reported an error in the middle of its streamed reply: ${reasonOf(event.message, event.code)}`,
      });
    }
  }
  // The client ends the iteration quietly when it is aborted: our abort is the caller's to report.
  call.signal.throwIfAborted();
  if (final === undefined) throw incompleteStream(call, 'no response.completed event');
  return responseOutcome(final, call);
}

/** The server's words for a failure, or a note that it gave none. */
const reasonOf = (message: unknown, code: unknown): string => clause(String(message ?? code ?? 'no reason given'));

type ResponsesUsage = {
  input_tokens?: unknown;
  output_tokens?: unknown;
  input_tokens_details?: { cached_tokens?: unknown };
  output_tokens_details?: { reasoning_tokens?: unknown };
};

function responseUsage(usage: unknown): ModelUsage | null {
  if (typeof usage !== 'object' || usage === null) return null;
  const {
    input_tokens: input,
    output_tokens: output,
    input_tokens_details: cached,
    output_tokens_details: reasoning,
  } = usage as ResponsesUsage;
  return toModelUsage(input, output, cached?.cached_tokens, reasoning?.reasoning_tokens);
}

interface OutputItem {
  type?: string;
  content?: { type?: string; text?: unknown; refusal?: unknown }[];
  call_id?: unknown;
  name?: unknown;
  arguments?: unknown;
}

function responseOutcome(response: unknown, call: ApiCall): ApiOutcome {
  const where = call.where;
  const output = (response as { output?: unknown } | null)?.output;
  if (typeof response !== 'object' || response === null || !Array.isArray(output))
    throw notAReply(call, response, 'a response object');
  const {
    status,
    incomplete_details: incomplete,
    usage,
  } = response as { status?: unknown; incomplete_details?: { reason?: unknown } | null; usage?: unknown };
  let text: string | null = null;
  let refusal: string | null = null;
  const toolCalls: ApiOutcome['toolCalls'] = [];
  for (const item of output as OutputItem[]) {
    if (item.type === 'message') {
      for (const part of item.content ?? []) {
        if (part.type === 'output_text' && typeof part.text === 'string') text = (text ?? '') + part.text;
        if (part.type === 'refusal' && typeof part.refusal === 'string') refusal = (refusal ?? '') + part.refusal;
      }
    } else if (item.type === 'function_call') {
      toolCalls.push({ id: textOf(item.call_id), name: textOf(item.name), arguments: textOf(item.arguments) });
    }
    // Reasoning items and built-in tools' items are not part of the loop's transcript.
  }
  // Numbered among the function calls, as the loop sees them.
  checkToolCalls(toolCalls, where, 'output(function_call)', 'name');
  const reason = incomplete?.reason;
  const finishReason =
    status === 'incomplete'
      ? reason === 'content_filter'
        ? 'content_filter'
        : reason === 'max_output_tokens'
          ? 'length'
          : String(reason ?? 'incomplete')
      : toolCalls.length > 0
        ? 'tool_calls'
        : 'stop';
  const { id, model } = response as { id?: unknown; model?: unknown };
  return {
    text,
    refusal,
    toolCalls,
    finishReason,
    usage: responseUsage(usage),
    id: nonEmptyText(id),
    model: nonEmptyText(model),
  };
}
