/**
 * The conversation of one task. Append-only, with a running size so the pre-call token
 * estimate is O(1) per step instead of re-serialising the history.
 */
import { CHARS_PER_TOKEN_ESTIMATE } from '../constants.js';
import type { Message } from '../model/types.js';

/** Per-message framing tokens providers add (role markers, separators). */
const MESSAGE_OVERHEAD_TOKENS = 4;

function messageChars(message: Message): number {
  switch (message.role) {
    case 'assistant': {
      let chars = message.content?.length ?? 0;
      for (const call of message.toolCalls ?? []) chars += call.name.length + call.arguments.length + call.id.length;
      return chars;
    }
    case 'tool':
      return message.content.length + message.toolCallId.length;
    default:
      return message.content.length;
  }
}

export class Transcript {
  readonly messages: Message[] = [];
  private chars = 0;
  /** The user message that states the current task; context trimming never drops it. */
  taskMessage: Message | null = null;

  /** `fixedChars` covers what every request carries besides messages: the tool specs. */
  constructor(private readonly fixedChars: number) {}

  append(message: Message): void {
    this.messages.push(message);
    this.chars += messageChars(message);
  }

  /** Estimated input tokens of a request made now, plus `extraChars` about to be appended. */
  estimateTokens(extraChars = 0): number {
    return (
      Math.ceil((this.chars + this.fixedChars + extraChars) / CHARS_PER_TOKEN_ESTIMATE) +
      this.messages.length * MESSAGE_OVERHEAD_TOKENS
    );
  }
}
