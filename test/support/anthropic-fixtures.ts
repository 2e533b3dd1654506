/**
 * Replies of a fake Anthropic Messages API, whole (JSON) and streamed (its named SSE events), built from one
 * description so a test can check that both end the same. Played by the scripted server of
 * `openai-server.ts`, which speaks plain HTTP and SSE whatever the API.
 */
import type { ServerStep } from './openai-server.js';

export interface AnthropicReply {
  text?: string;
  toolCalls?: readonly { id: string; name: string; args: unknown }[];
  /** `input` counts every input token (cache reads included), as loopstate does; `cached` of them were read from the cache. */
  usage?: { input: number; output: number; cached?: number };
  /** `end_turn` by default, `tool_use` with tool calls; `max_tokens`, `refusal`... */
  stopReason?: string;
  model?: string;
}

const DEFAULT_USAGE = { input: 100, output: 20 };

const stopReasonOf = (reply: AnthropicReply) =>
  reply.stopReason ?? ((reply.toolCalls?.length ?? 0) > 0 ? 'tool_use' : 'end_turn');

/** Anthropic counts cache reads apart from `input_tokens`. */
const usageOf = (reply: AnthropicReply) => {
  const usage: NonNullable<AnthropicReply['usage']> = reply.usage ?? DEFAULT_USAGE;
  return {
    input_tokens: usage.input - (usage.cached ?? 0),
    output_tokens: usage.output,
    cache_creation_input_tokens: 0,
    cache_read_input_tokens: usage.cached ?? 0,
  };
};

/** A Messages API reply. */
export function anthropicMessage(reply: AnthropicReply): Record<string, unknown> {
  return {
    id: 'msg_test',
    type: 'message',
    role: 'assistant',
    model: reply.model ?? 'claude-sonnet-4-5-20250929',
    content: [
      ...(reply.text === undefined ? [] : [{ type: 'text', text: reply.text }]),
      ...(reply.toolCalls ?? []).map((call) => ({ type: 'tool_use', id: call.id, name: call.name, input: call.args })),
    ],
    stop_reason: stopReasonOf(reply),
    stop_sequence: null,
    usage: usageOf(reply),
  };
}

const pieces = (text: string, size: number): string[] =>
  Array.from({ length: Math.ceil(text.length / size) }, (_, index) => text.slice(index * size, (index + 1) * size));

/** The same reply as the Messages API's stream events; `complete: false` stops before `message_delta`. */
export function anthropicEvents(reply: AnthropicReply, { complete = true } = {}): { event: string; data: unknown }[] {
  const usage = usageOf(reply);
  const events: { event: string; data: unknown }[] = [
    {
      event: 'message_start',
      data: {
        type: 'message_start',
        message: {
          id: 'msg_test',
          type: 'message',
          role: 'assistant',
          model: reply.model ?? 'claude-sonnet-4-5-20250929',
          content: [],
          stop_reason: null,
          stop_sequence: null,
          usage: { ...usage, output_tokens: 1 },
        },
      },
    },
  ];
  let index = 0;
  if (reply.text !== undefined) {
    events.push({
      event: 'content_block_start',
      data: { type: 'content_block_start', index, content_block: { type: 'text', text: '' } },
    });
    for (const piece of pieces(reply.text, 4))
      events.push({
        event: 'content_block_delta',
        data: { type: 'content_block_delta', index, delta: { type: 'text_delta', text: piece } },
      });
    events.push({ event: 'content_block_stop', data: { type: 'content_block_stop', index } });
    index += 1;
  }
  for (const call of reply.toolCalls ?? []) {
    events.push({
      event: 'content_block_start',
      data: {
        type: 'content_block_start',
        index,
        content_block: { type: 'tool_use', id: call.id, name: call.name, input: {} },
      },
    });
    for (const piece of pieces(JSON.stringify(call.args), 5))
      events.push({
        event: 'content_block_delta',
        data: { type: 'content_block_delta', index, delta: { type: 'input_json_delta', partial_json: piece } },
      });
    events.push({ event: 'content_block_stop', data: { type: 'content_block_stop', index } });
    index += 1;
  }
  if (!complete) return events;
  events.push(
    {
      event: 'message_delta',
      data: {
        type: 'message_delta',
        delta: { stop_reason: stopReasonOf(reply), stop_sequence: null },
        usage: { output_tokens: usage.output_tokens },
      },
    },
    { event: 'message_stop', data: { type: 'message_stop' } },
  );
  return events;
}

/** A whole reply, streamed or not. */
export function anthropicStep(stream: boolean, reply: AnthropicReply): ServerStep {
  return stream
    ? { kind: 'sse', events: anthropicEvents(reply), done: false }
    : { kind: 'json', body: anthropicMessage(reply) };
}

/** An Anthropic error body with its status (`overloaded_error` for 529, `rate_limit_error` for 429...). */
export function anthropicError(status: number, message: string, headers: Record<string, string> = {}): ServerStep {
  const type =
    status === 429
      ? 'rate_limit_error'
      : status === 529
        ? 'overloaded_error'
        : status === 401
          ? 'authentication_error'
          : status >= 500
            ? 'api_error'
            : 'invalid_request_error';
  return { kind: 'json', status, body: { type: 'error', error: { type, message } }, headers };
}
