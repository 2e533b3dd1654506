import { describe, expect, it } from 'vitest';
import type { Message } from '../../contracts/model.js';
import { Transcript } from '../runtime/transcript.js';
import { closingOf, CONSOLIDATE_AT, TranscriptChain } from './transcript-chain.js';

const user = (text: string): Message => ({ role: 'user', content: text });

describe('TranscriptChain', () => {
  it('starts whole, then chunks the messages since, and is whole again once they reach CONSOLIDATE_AT of it', () => {
    expect(CONSOLIDATE_AT).toBe(0.5);
    const transcript = new Transcript(0);
    for (let index = 0; index < 8; index += 1) transcript.append(user('x'.repeat(100)));
    const chain = new TranscriptChain();
    expect(chain.started).toBe(false);
    const first = chain.take(3, transcript);
    expect(chain.started).toBe(true);
    expect(first).toMatchObject({ previous: 0, consolidated: false, change: { replace: true } });
    expect(first.change.messages).toHaveLength(8);
    // Three messages since (3/8 of the whole): chunked on their own, each naming the chunk before.
    for (let index = 0; index < 3; index += 1) transcript.append(user('x'.repeat(100)));
    const second = chain.take(7, transcript);
    expect(second).toMatchObject({ previous: 3, consolidated: false, change: { replace: false } });
    expect(second.change.messages).toHaveLength(3);
    // One more reaches half of the whole: this chunk holds all twelve.
    transcript.append(user('x'.repeat(100)));
    const third = chain.take(9, transcript);
    expect(third).toMatchObject({ previous: 7, consolidated: true, change: { replace: true } });
    expect(third.change.messages).toHaveLength(12);
    // Where a reader of the chain's end starts: its whole chunk.
    expect(chain.wholeSeq).toBe(9);
    // Nothing new: an empty change, never made whole for nothing.
    expect(chain.take(11, transcript)).toMatchObject({ previous: 9, consolidated: false, change: { messages: [] } });
  });

  it('continues a restored chain from its whole chunk: what came after it counts toward the next whole one', () => {
    const transcript = new Transcript(0);
    for (let index = 0; index < 10; index += 1) transcript.append(user('x'.repeat(100)));
    // The chain's whole chunk held 8 messages; 2 were chunked after it, one more makes half.
    const restored = new TranscriptChain();
    restored.restore(40, transcript, 8, 31);
    expect(restored.wholeSeq).toBe(31);
    transcript.append(user('x'.repeat(100)));
    expect(restored.take(44, transcript)).toMatchObject({ previous: 40, consolidated: false });
    transcript.append(user('x'.repeat(100)));
    const whole = restored.take(48, transcript);
    expect(whole).toMatchObject({ previous: 44, consolidated: true });
    expect(whole.change.messages).toHaveLength(12);
    expect(restored.wholeSeq).toBe(48);
  });

  it('weighs a restored whole chunk from the running count: its messages are not read again (thousands at 10,000 steps)', () => {
    const transcript = new Transcript(0);
    for (let index = 0; index < 10; index += 1) transcript.append(user('x'.repeat(100)));
    // The whole chunk's 8 messages turned into traps: a restore that reads one fails here.
    const trap = new Proxy(user(''), {
      get: () => {
        throw new Error('a whole chunk message was read');
      },
    });
    for (let index = 0; index < 8; index += 1) transcript.messages[index] = trap;
    const restored = new TranscriptChain();
    restored.restore(40, transcript, 8, 31);
    // The same decisions as from the messages weighed one by one (the test above): one more is not yet half.
    transcript.append(user('x'.repeat(100)));
    expect(restored.take(44, transcript)).toMatchObject({ previous: 40, consolidated: false });
    // And a whole chunk of other sizes: 8 messages of 300 characters, 2 of 100 since; 9 more of 100 make half.
    const larger = new Transcript(0);
    for (let index = 0; index < 8; index += 1) larger.append(user('y'.repeat(300)));
    for (let index = 0; index < 2; index += 1) larger.append(user('y'.repeat(100)));
    const chain = new TranscriptChain();
    chain.restore(40, larger, 8, 31);
    // (8 × 332) / 2 = 1,328 against (2 + n) × 132: n = 9 reaches it, n = 8 (1,320: 8 short) does not.
    for (let index = 0; index < 8; index += 1) larger.append(user('y'.repeat(100)));
    expect(chain.take(44, larger)).toMatchObject({ consolidated: false });
    larger.append(user('y'.repeat(100)));
    expect(chain.take(48, larger)).toMatchObject({ consolidated: true });
  });
});

describe('closingOf', () => {
  const assistant = (id: string): Message => ({
    role: 'assistant',
    content: null,
    toolCalls: [{ id, name: 'lookup', arguments: '{"key":"a"}' }],
  });
  const answer = (id: string, content = 'value a'): Message => ({ role: 'tool', toolCallId: id, content });
  const transcript: Message[] = [user('go'), assistant('c1'), answer('c1'), assistant('c2')];
  const copy = (messages: Message[]) => messages.map((message) => structuredClone(message));

  it('gives what a result adds after copies of the transcript: the notes closing its open calls, or nothing', () => {
    const note = answer('c2', 'not run: the run stopped');
    expect(closingOf(transcript, [...copy(transcript), note])).toEqual([note]);
    expect(closingOf(transcript, copy(transcript))).toEqual([]);
  });

  it('is null when the result is not the transcript followed by notes (the record then keeps the messages whole)', () => {
    const note = answer('c2', 'not run');
    // Shorter; a message changed; a tool call's arguments changed; a note inserted before the end.
    expect(closingOf(transcript, copy(transcript).slice(0, 3))).toBeNull();
    expect(closingOf(transcript, [user('gone'), ...copy(transcript).slice(1), note])).toBeNull();
    const changedCall = copy(transcript);
    changedCall[1] = {
      role: 'assistant',
      content: null,
      toolCalls: [{ id: 'c1', name: 'lookup', arguments: '{"key":"b"}' }],
    };
    expect(closingOf(transcript, changedCall)).toBeNull();
    expect(closingOf(transcript, [...copy(transcript).slice(0, 2), note, ...copy(transcript).slice(2)])).toBeNull();
    const noCalls = copy(transcript);
    noCalls[3] = { role: 'assistant', content: null };
    expect(closingOf(transcript, noCalls)).toBeNull();
  });
});
