/**
 * A `doStream` result read to its end: text deltas and tool-call starts reported as progress as they
 * arrive, the reply assembled from the same parts an unstreamed result has. A stream that reports an
 * `error` part, or ends before its `finish` part, fails the call (carrying the usage it reported, if any).
 */
import { ModelCallError } from '../../contracts/errors.js';
import type { ModelProgress, ToolCallRequest } from '../../contracts/model.js';
import { streamErrorPart, type ClassifyFacts } from './classify-error.js';
import { argumentsOf, responseIdentity, usageOf, type ReplyParts } from './response.js';

interface StreamPart {
  type?: unknown;
  id?: unknown;
  delta?: unknown;
  toolName?: unknown;
  toolCallId?: unknown;
  input?: unknown;
  providerExecuted?: unknown;
  finishReason?: unknown;
  usage?: unknown;
  error?: unknown;
}

export interface StreamReading {
  progress: (progress: ModelProgress) => void;
  facts: ClassifyFacts;
  provider: string;
}

/**
 * Reads the stream; resolves with the reply's parts once the stream is done, rejects with a classified error.
 * @example
 * const parts = await readStream(result.stream, { progress, facts, provider: model.provider });
 */
export async function readStream(stream: ReadableStream<unknown>, reading: StreamReading): Promise<ReplyParts> {
  const { progress, facts, provider } = reading;
  const texts: string[] = [];
  const toolCalls: ToolCallRequest[] = [];
  const started = new Set<string>();
  let finish: { finishReason: unknown; usage: unknown } | null = null;
  let identity: Pick<ReplyParts, 'responseId' | 'responseModel'> = {};
  const announce = (callId: string, name: string) => {
    if (started.has(callId)) return;
    started.add(callId);
    progress({ type: 'tool_call_started', callId, name });
  };
  const reader = stream.getReader();
  try {
    for (;;) {
      const { done, value } = await reader.read();
      if (done) break;
      if (typeof value !== 'object' || value === null) continue;
      const part = value as StreamPart;
      switch (part.type) {
        case 'text-delta':
          if (typeof part.delta === 'string' && part.delta !== '') {
            texts.push(part.delta);
            progress({ type: 'text_delta', text: part.delta });
          }
          break;
        case 'tool-input-start':
          if (part.providerExecuted !== true && typeof part.id === 'string' && typeof part.toolName === 'string')
            announce(part.id, part.toolName);
          break;
        case 'tool-call':
          if (
            part.providerExecuted === true ||
            typeof part.toolCallId !== 'string' ||
            typeof part.toolName !== 'string'
          )
            break;
          announce(part.toolCallId, part.toolName);
          toolCalls.push({ id: part.toolCallId, name: part.toolName, arguments: argumentsOf(part.input) });
          break;
        case 'response-metadata':
          identity = { ...identity, ...responseIdentity(part) };
          break;
        case 'finish':
          finish = { finishReason: part.finishReason, usage: part.usage };
          break;
        case 'error':
          throw streamErrorPart(part.error, {
            ...facts,
            usage: finish === null ? null : usageOf(finish.usage, provider),
          });
        default:
          // Reasoning, sources, files, raw chunks and stream-start carry nothing the loop keeps.
          break;
      }
    }
  } finally {
    // Stops the provider reading on after a failure; a finished stream is already released.
    reader.cancel().catch(() => undefined);
  }
  if (finish === null) {
    throw new ModelCallError({
      kind: 'connection',
      message: `${facts.where} ended its streamed reply before it was complete (no finish part)`,
    });
  }
  return { text: texts.length === 0 ? null : texts.join(''), toolCalls, ...finish, ...identity };
}
