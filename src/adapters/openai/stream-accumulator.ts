/**
 * Chat Completions stream chunks folded into one completion, so a streamed reply ends exactly as the
 * same reply unstreamed would. Tool-call deltas are matched by `index`; a server that leaves it out
 * (some OpenAI-compatible ones do) continues the last call unless the delta carries a new id.
 */
import type { ModelProgress } from '../../contracts/model.js';

interface ToolCallDelta {
  index?: number;
  id?: string | null;
  function?: { name?: string | null; arguments?: string | null } | null;
}

/** The parts of a chunk we read; everything else is ignored. */
export interface ChatChunk {
  id?: string | null;
  model?: string | null;
  choices?: {
    index?: number;
    delta?: { content?: string | null; refusal?: string | null; tool_calls?: ToolCallDelta[] | null } | null;
    finish_reason?: string | null;
  }[];
  usage?: ChatUsage | null;
}

export interface ChatUsage {
  prompt_tokens?: number;
  completion_tokens?: number;
  prompt_tokens_details?: { cached_tokens?: number | null } | null;
  completion_tokens_details?: { reasoning_tokens?: number | null } | null;
}

/** What a completion says, streamed or not. */
export interface ChatOutcome {
  text: string | null;
  refusal: string | null;
  toolCalls: { id: string; name: string; arguments: string }[];
  finishReason: string | null;
  usage: ChatUsage | null;
  /** The completion's id and the model that answered, as the server named them. */
  id: string | null;
  model: string | null;
}

/**
 * Accumulates chunks; `progress` hears text deltas and each tool call's start.
 * @example
 * const accumulator = new ChatStreamAccumulator(request.onProgress); for await (const chunk of stream) accumulator.add(chunk); accumulator.outcome();
 */
export class ChatStreamAccumulator {
  private text = '';
  private sawText = false;
  private refusal: string | null = null;
  private readonly calls: { id: string; name: string; arguments: string; announced: boolean }[] = [];
  private readonly byIndex = new Map<number, number>();
  private finishReason: string | null = null;
  private usage: ChatUsage | null = null;
  private id: string | null = null;
  private model: string | null = null;

  constructor(private readonly progress: (progress: ModelProgress) => void = () => undefined) {}

  /** True once a choice carried a finish reason: the reply is whole even if the usage chunk never comes. */
  get finished(): boolean {
    return this.finishReason !== null;
  }

  add(chunk: ChatChunk): void {
    if (chunk.usage) this.usage = chunk.usage;
    // Every chunk repeats them; the first that has them names the completion.
    if (this.id === null && typeof chunk.id === 'string' && chunk.id !== '') this.id = chunk.id;
    if (this.model === null && typeof chunk.model === 'string' && chunk.model !== '') this.model = chunk.model;
    // `n` is always 1 here: only the first choice is a reply of ours.
    const choice = chunk.choices?.find((candidate) => (candidate.index ?? 0) === 0);
    if (choice === undefined) return;
    const delta = choice.delta ?? {};
    if (typeof delta.content === 'string' && delta.content !== '') {
      this.text += delta.content;
      this.sawText = true;
      this.progress({ type: 'text_delta', text: delta.content });
    }
    if (typeof delta.refusal === 'string') this.refusal = (this.refusal ?? '') + delta.refusal;
    for (const call of delta.tool_calls ?? []) this.addToolCall(call);
    if (choice.finish_reason) this.finishReason = choice.finish_reason;
  }

  private addToolCall(delta: ToolCallDelta): void {
    const last = this.calls.length - 1;
    let position: number | undefined;
    if (typeof delta.index === 'number') {
      position = this.byIndex.get(delta.index);
      if (position === undefined)
        this.byIndex.set(
          delta.index,
          (position = this.calls.push({ id: '', name: '', arguments: '', announced: false }) - 1),
        );
    } else if (last >= 0 && (!delta.id || delta.id === this.calls[last]?.id)) {
      position = last;
    } else {
      position = this.calls.push({ id: '', name: '', arguments: '', announced: false }) - 1;
    }
    const call = this.calls[position];
    if (call === undefined) return;
    if (delta.id) call.id = delta.id;
    if (delta.function?.name) call.name += delta.function.name;
    if (delta.function?.arguments) call.arguments += delta.function.arguments;
    if (!call.announced && call.name !== '') {
      call.announced = true;
      this.progress({ type: 'tool_call_started', callId: call.id, name: call.name });
    }
  }

  outcome(): ChatOutcome {
    return {
      text: this.sawText ? this.text : null,
      refusal: this.refusal,
      toolCalls: this.calls.map(({ id, name, arguments: args }) => ({ id, name, arguments: args })),
      finishReason: this.finishReason,
      usage: this.usage,
      id: this.id,
      model: this.model,
    };
  }
}
