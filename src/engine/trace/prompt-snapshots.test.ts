import { describe, expect, it } from 'vitest';
import type { Message } from '../../contracts/model.js';
import { Transcript } from '../runtime/transcript.js';
import { PromptRecorder, rebuildPrompts } from './prompt-snapshots.js';
import type { TraceEvent } from '../../contracts/trace-schema.js';

const user = (content: string): Message => ({ role: 'user', content });

function promptEvent(snapshot: ReturnType<PromptRecorder['next']>): TraceEvent {
  return { type: 'prompt', runId: 'r', at: 0, step: snapshot.call, taskId: 'main', tools: [], ...snapshot };
}

describe('PromptRecorder', () => {
  it('records only the messages added since the previous call, and what a trim replaced', () => {
    const recorder = new PromptRecorder();
    const transcript = new Transcript(0);
    transcript.append(user('a'));
    transcript.append(user('b'));
    const events = [promptEvent(recorder.next(transcript))];
    expect(events[0]).toMatchObject({ call: 1, basedOn: null, keep: 0, added: [user('a'), user('b')] });
    transcript.append(user('c'));
    events.push(promptEvent(recorder.next(transcript)));
    expect(events[1]).toMatchObject({ call: 2, basedOn: 1, keep: 2, added: [user('c')] });
    // A trim that replaces the second message: the snapshot keeps the first and rewrites from there.
    const [first, , third] = transcript.messages;
    transcript.replaceMessages([first as Message, user('[dropped]'), third as Message]);
    transcript.append(user('d'));
    events.push(promptEvent(recorder.next(transcript)));
    expect(events[2]).toMatchObject({ call: 3, basedOn: 2, keep: 1, added: [user('[dropped]'), user('c'), user('d')] });
    // A new task's conversation starts afresh.
    const next = new Transcript(0);
    next.append(user('task 2'));
    events.push(promptEvent(recorder.next(next)));
    expect(events[3]).toMatchObject({ call: 4, basedOn: null, keep: 0 });

    expect(rebuildPrompts(events).map((prompt) => prompt.messages.map((message) => message.content))).toEqual([
      ['a', 'b'],
      ['a', 'b', 'c'],
      ['a', '[dropped]', 'c', 'd'],
      ['task 2'],
    ]);
  });

  it('refuses a snapshot based on a call the trace does not have', () => {
    const orphan: TraceEvent = {
      type: 'prompt',
      runId: 'r',
      at: 0,
      call: 2,
      step: 2,
      taskId: 'main',
      basedOn: 1,
      keep: 1,
      added: [],
      tools: [],
    };
    expect(() => rebuildPrompts([orphan])).toThrow(
      'prompt 2 of run r is based on call 1, which the trace does not have',
    );
  });
});
