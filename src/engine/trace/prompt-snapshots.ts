/**
 * Prompt snapshots: what the model was sent on each call, recorded as the difference from the call
 * before (how many of its messages are kept, and the messages after them), so a long history is
 * written once, not once per call. `rebuildPrompts` turns them back into full requests.
 */
import type { Message } from '../../contracts/model.js';
import type { TraceEvent, TracedMessage } from '../../contracts/trace-schema.js';

/** What a conversation tells the recorder: its messages and the lowest index replaced since it last asked. */
interface RecordedConversation {
  readonly messages: readonly Message[];
  takeFirstReplaced(): number;
}

type PromptEvent = Extract<TraceEvent, { type: 'prompt' }>;

/** Follows one run's model calls and says what each one adds to the one before. */
export class PromptRecorder {
  private calls = 0;
  private previous: { conversation: RecordedConversation; sent: number } | null = null;

  /** The snapshot of the request about to be sent: O(messages added since the previous call). */
  next(conversation: RecordedConversation): Pick<PromptEvent, 'call' | 'basedOn' | 'keep' | 'added'> {
    const call = ++this.calls;
    const firstReplaced = conversation.takeFirstReplaced();
    const previous = this.previous;
    const continues = previous !== null && previous.conversation === conversation;
    const keep = continues ? Math.min(previous.sent, firstReplaced) : 0;
    this.previous = { conversation, sent: conversation.messages.length };
    return {
      call,
      basedOn: continues ? call - 1 : null,
      keep,
      added: conversation.messages.slice(keep) as TracedMessage[],
    };
  }
}

/**
 * One model request rebuilt from a trace's prompt snapshots.
 * @example
 * const [first] = rebuildPrompts(result.trace);
 * console.log(first?.messages.at(-1)?.content);
 */
export interface RebuiltPrompt {
  runId: string;
  call: number;
  step: number;
  taskId: string;
  messages: TracedMessage[];
  tools: string[];
}

/**
 * Rebuilds every model request of the trace (recorded with `trace: { prompts: true }`), in order, from
 * the snapshots' kept messages and additions; throws when a snapshot refers to a call the trace lacks.
 * @example
 * const { events } = readTraceFile('run.jsonl');
 * for (const prompt of rebuildPrompts(events)) console.log(prompt.call, prompt.messages.length);
 */
export function rebuildPrompts(events: Iterable<TraceEvent>): RebuiltPrompt[] {
  const rebuilt: RebuiltPrompt[] = [];
  const byRun = new Map<string, Map<number, TracedMessage[]>>();
  for (const event of events) {
    if (event.type !== 'prompt') continue;
    let calls = byRun.get(event.runId);
    if (calls === undefined) byRun.set(event.runId, (calls = new Map()));
    let base: TracedMessage[] = [];
    if (event.basedOn !== null) {
      const previous = calls.get(event.basedOn);
      if (previous === undefined)
        throw new Error(
          `prompt ${event.call} of run ${event.runId} is based on call ${event.basedOn}, which the trace does not have`,
        );
      if (event.keep > previous.length)
        throw new Error(
          `prompt ${event.call} of run ${event.runId} keeps ${event.keep} messages of call ${event.basedOn}, which had ${previous.length}`,
        );
      base = previous.slice(0, event.keep);
    }
    const messages = base.concat(event.added);
    calls.set(event.call, messages);
    rebuilt.push({
      runId: event.runId,
      call: event.call,
      step: event.step,
      taskId: event.taskId,
      messages,
      tools: event.tools,
    });
  }
  return rebuilt;
}
