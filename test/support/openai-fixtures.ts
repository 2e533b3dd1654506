/**
 * Replies of the local OpenAI server in both APIs' wire formats, whole and streamed, built from one
 * description so a test can check that streamed and unstreamed replies end the same.
 */
import type { ServerStep } from './openai-server.js';

export interface FixtureReply {
  text?: string;
  toolCalls?: readonly { id: string; name: string; args: unknown }[];
  usage?: { input: number; output: number; cached?: number; reasoning?: number };
  finishReason?: string;
  refusal?: string;
  /** The response id (default `chatcmpl-test` / `resp_test`) and the model that answered (default `gpt-4.1-mini`). */
  id?: string;
  model?: string;
}

const DEFAULT_USAGE = { input: 100, output: 20 };

const chatUsage = (usage: FixtureReply['usage'] = DEFAULT_USAGE) => ({
  prompt_tokens: usage.input,
  completion_tokens: usage.output,
  total_tokens: usage.input + usage.output,
  ...(usage.cached === undefined ? {} : { prompt_tokens_details: { cached_tokens: usage.cached } }),
  ...(usage.reasoning === undefined ? {} : { completion_tokens_details: { reasoning_tokens: usage.reasoning } }),
});

const finishOf = (reply: FixtureReply) =>
  reply.finishReason ?? ((reply.toolCalls?.length ?? 0) > 0 ? 'tool_calls' : 'stop');

/** A Chat Completions reply. */
export function chatCompletion(reply: FixtureReply): Record<string, unknown> {
  return {
    id: reply.id ?? 'chatcmpl-test',
    object: 'chat.completion',
    created: 1,
    model: reply.model ?? 'gpt-4.1-mini',
    choices: [
      {
        index: 0,
        finish_reason: finishOf(reply),
        message: {
          role: 'assistant',
          content: reply.text ?? null,
          refusal: reply.refusal ?? null,
          ...(reply.toolCalls && reply.toolCalls.length > 0
            ? {
                tool_calls: reply.toolCalls.map((call) => ({
                  id: call.id,
                  type: 'function',
                  function: { name: call.name, arguments: JSON.stringify(call.args) },
                })),
              }
            : {}),
        },
      },
    ],
    usage: chatUsage(reply.usage),
  };
}

/** Splits text in pieces of `size` characters, as a server streams it. */
const pieces = (text: string, size: number): string[] =>
  Array.from({ length: Math.ceil(text.length / size) }, (_, index) => text.slice(index * size, (index + 1) * size));

/** The same reply as Chat Completions chunks; `withoutIndex` leaves `index` out of tool-call deltas, as some servers do. */
export function chatChunks(reply: FixtureReply, { withoutIndex = false, usage = true } = {}): unknown[] {
  const chunk = (delta: Record<string, unknown>, finish: string | null = null) => ({
    id: reply.id ?? 'chatcmpl-test',
    object: 'chat.completion.chunk',
    created: 1,
    model: reply.model ?? 'gpt-4.1-mini',
    choices: [{ index: 0, delta, finish_reason: finish }],
  });
  const chunks: unknown[] = [chunk({ role: 'assistant', content: '' })];
  for (const piece of pieces(reply.text ?? '', 4)) chunks.push(chunk({ content: piece }));
  if (reply.refusal !== undefined) chunks.push(chunk({ refusal: reply.refusal }));
  (reply.toolCalls ?? []).forEach((call, index) => {
    const position = withoutIndex ? {} : { index };
    chunks.push(
      chunk({
        tool_calls: [{ ...position, id: call.id, type: 'function', function: { name: call.name, arguments: '' } }],
      }),
    );
    for (const piece of pieces(JSON.stringify(call.args), 5))
      chunks.push(chunk({ tool_calls: [{ ...position, function: { arguments: piece } }] }));
  });
  chunks.push(chunk({}, finishOf(reply)));
  if (usage)
    chunks.push({
      id: reply.id ?? 'chatcmpl-test',
      object: 'chat.completion.chunk',
      created: 1,
      model: reply.model ?? 'gpt-4.1-mini',
      choices: [],
      usage: chatUsage(reply.usage),
    });
  return chunks;
}

/** A Responses API response object. */
export function responsesResponse(reply: FixtureReply): Record<string, unknown> {
  const usage: NonNullable<FixtureReply['usage']> = reply.usage ?? DEFAULT_USAGE;
  const output: unknown[] = [];
  if (reply.text !== undefined || reply.refusal !== undefined) {
    output.push({
      type: 'message',
      id: 'msg_1',
      role: 'assistant',
      status: 'completed',
      content: [
        ...(reply.text === undefined ? [] : [{ type: 'output_text', text: reply.text, annotations: [] }]),
        ...(reply.refusal === undefined ? [] : [{ type: 'refusal', refusal: reply.refusal }]),
      ],
    });
  }
  for (const call of reply.toolCalls ?? [])
    output.push({
      type: 'function_call',
      id: `fc_${call.id}`,
      call_id: call.id,
      name: call.name,
      arguments: JSON.stringify(call.args),
      status: 'completed',
    });
  const incomplete = reply.finishReason === 'content_filter' || reply.finishReason === 'length';
  return {
    id: reply.id ?? 'resp_test',
    object: 'response',
    created_at: 1,
    model: reply.model ?? 'gpt-4.1-mini',
    status: incomplete ? 'incomplete' : 'completed',
    incomplete_details: incomplete
      ? { reason: reply.finishReason === 'length' ? 'max_output_tokens' : 'content_filter' }
      : null,
    output,
    usage: {
      input_tokens: usage.input,
      output_tokens: usage.output,
      total_tokens: usage.input + usage.output,
      input_tokens_details: { cached_tokens: usage.cached ?? 0 },
      output_tokens_details: { reasoning_tokens: usage.reasoning ?? 0 },
    },
  };
}

/** The same reply as Responses API stream events, ending in `response.completed` unless `complete: false`. */
export function responsesEvents(reply: FixtureReply, { complete = true } = {}): unknown[] {
  const response = responsesResponse(reply);
  const events: unknown[] = [
    { type: 'response.created', sequence_number: 0, response: { ...response, status: 'in_progress', output: [] } },
  ];
  if (reply.text !== undefined) {
    events.push({
      type: 'response.output_item.added',
      output_index: 0,
      item: { type: 'message', id: 'msg_1', role: 'assistant', content: [] },
    });
    for (const piece of pieces(reply.text, 4))
      events.push({
        type: 'response.output_text.delta',
        item_id: 'msg_1',
        output_index: 0,
        content_index: 0,
        delta: piece,
      });
  }
  for (const call of reply.toolCalls ?? []) {
    events.push({
      type: 'response.output_item.added',
      output_index: 1,
      item: { type: 'function_call', id: `fc_${call.id}`, call_id: call.id, name: call.name, arguments: '' },
    });
    events.push({
      type: 'response.function_call_arguments.delta',
      item_id: `fc_${call.id}`,
      output_index: 1,
      delta: JSON.stringify(call.args),
    });
  }
  if (complete) events.push({ type: 'response.completed', response });
  return events.map((data) => ({ event: (data as { type: string }).type, data }));
}

/** An OpenAI error body with its status. */
export function apiError(status: number, message: string, headers: Record<string, string> = {}): ServerStep {
  const type = status === 429 ? 'rate_limit_exceeded' : status >= 500 ? 'server_error' : 'invalid_request_error';
  return { kind: 'json', status, body: { error: { message, type, param: null, code: null } }, headers };
}

/** A whole reply of the given API, streamed or not. */
export function replyStep(api: 'chat' | 'responses', stream: boolean, reply: FixtureReply): ServerStep {
  if (api === 'chat')
    return stream ? { kind: 'sse', events: chatChunks(reply) } : { kind: 'json', body: chatCompletion(reply) };
  // The Responses API stream has no [DONE]: response.completed ends it.
  return stream
    ? { kind: 'sse', events: responsesEvents(reply), done: false }
    : { kind: 'json', body: responsesResponse(reply) };
}
