/**
 * The conversation of one task. Append-only, with a running size so the pre-call token
 * estimate is O(1) per step instead of re-serialising the history.
 */
import { CHARS_PER_TOKEN_ESTIMATE } from '../constants.js';
import type { Message } from '../../contracts/model.js';

/** Per-message framing tokens providers add (role markers, separators). */
const MESSAGE_OVERHEAD_TOKENS = 4;
/** The same framing counted in characters, for a message about to be appended (ceil keeps it exact: +4 tokens). */
export const MESSAGE_OVERHEAD_CHARS = MESSAGE_OVERHEAD_TOKENS * CHARS_PER_TOKEN_ESTIMATE;

/** Characters of one message that count towards the estimate. */
export function messageChars(message: Message): number {
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

/** Freezes a message in place (its tool calls included) as it joins the transcript: no one edits it afterwards. */
function freezeMessage(message: Message): Message {
  if (message.role === 'assistant' && message.toolCalls !== undefined) {
    for (const call of message.toolCalls) Object.freeze(call);
    Object.freeze(message.toolCalls);
  }
  return Object.freeze(message);
}

export class Transcript {
  readonly messages: Message[] = [];
  private chars = 0;
  /** The frozen copy handed to the model, rebuilt only after an append. */
  private frozenCopy: readonly Message[] | null = null;
  /** The user message that states the current task; context trimming never drops it. */
  taskMessage: Message | null = null;
  /** The lowest index `replaceMessages` changed since `takeFirstReplaced()` was last called: what a prompt snapshot may keep. */
  private firstReplaced = Infinity;
  /** Counts `replaceMessages` calls: the journal appends only new messages while it is unchanged. */
  revision = 0;

  /** `fixedChars` covers what every request carries besides messages: the tool specs. */
  constructor(readonly fixedChars: number) {}

  append(message: Message): void {
    this.messages.push(freezeMessage(message));
    this.chars += messageChars(message);
    this.frozenCopy = null;
  }

  /** The messages as a frozen array of frozen messages: what a model request carries, never the live list. */
  snapshot(): readonly Message[] {
    this.frozenCopy ??= Object.freeze([...this.messages]);
    return this.frozenCopy;
  }

  /** Replaces every message in place (context trimming); the running size is recounted. */
  replaceMessages(messages: readonly Message[]): void {
    let kept = 0;
    while (kept < this.messages.length && kept < messages.length && this.messages[kept] === messages[kept]) kept++;
    this.firstReplaced = Math.min(this.firstReplaced, kept);
    // The kept prefix stays as it is (frozen already); a spread of the whole list would also cap its length.
    this.messages.length = kept;
    for (let index = kept; index < messages.length; index++) this.messages.push(freezeMessage(messages[index]!));
    this.revision += 1;
    this.chars = messages.reduce((sum, message) => sum + messageChars(message), 0);
    // The model must get the trimmed conversation, not a copy made before it.
    this.frozenCopy = null;
  }

  /** The lowest index replaced since the last call (Infinity when none was), and start counting afresh. */
  takeFirstReplaced(): number {
    const index = this.firstReplaced;
    this.firstReplaced = Infinity;
    return index;
  }

  /** The characters of every message that count towards the estimate (`messageChars` summed, kept as they join). */
  get messageChars(): number {
    return this.chars;
  }

  /** Estimated input tokens of a request made now, plus `extraChars` about to be appended. */
  estimateTokens(extraChars = 0): number {
    return estimateRequestTokens(this.chars + this.fixedChars + extraChars, this.messages.length);
  }
}

/** Estimated input tokens of a request of `chars` characters in `messageCount` messages. */
export function estimateRequestTokens(chars: number, messageCount: number): number {
  return Math.ceil(chars / CHARS_PER_TOKEN_ESTIMATE) + messageCount * MESSAGE_OVERHEAD_TOKENS;
}
