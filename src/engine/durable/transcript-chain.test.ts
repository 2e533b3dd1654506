import { describe, expect, it } from 'vitest';
import type { Message } from '../../contracts/model.js';
import { Transcript } from '../runtime/transcript.js';
import { CONSOLIDATE_AT, TranscriptChain } from './transcript-chain.js';

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
});
