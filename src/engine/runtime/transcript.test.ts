import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { CHARS_PER_TOKEN_ESTIMATE } from '../constants.js';
import type { Message } from '../../contracts/model.js';
import { Transcript } from './transcript.js';

/** Framing tokens added per message (private in the module; pinned here on purpose). */
const OVERHEAD = 4;
/** A string worth exactly `tokens` estimated tokens. */
const text = (tokens: number) => 'x'.repeat(tokens * CHARS_PER_TOKEN_ESTIMATE);

describe('Transcript', () => {
  it('estimates only the fixed tool-spec chars when empty, rounded up', () => {
    expect(new Transcript(0).estimateTokens()).toBe(0);
    expect(new Transcript(CHARS_PER_TOKEN_ESTIMATE * 3).estimateTokens()).toBe(3);
    expect(new Transcript(CHARS_PER_TOKEN_ESTIMATE * 3 + 1).estimateTokens()).toBe(4);
  });

  it('adds extraChars to the estimate without appending anything', () => {
    const transcript = new Transcript(0);
    expect(transcript.estimateTokens(CHARS_PER_TOKEN_ESTIMATE * 5)).toBe(5);
    expect(transcript.estimateTokens(1)).toBe(1);
    expect(transcript.estimateTokens()).toBe(0);
    expect(transcript.messages).toHaveLength(0);
  });

  it('sums fixed, message and extra chars before rounding up once', () => {
    const transcript = new Transcript(1);
    transcript.append({ role: 'user', content: 'ab' });
    // (1 + 2 + 1) chars = 1 token, not 1 + 1 + 1 rounded up separately.
    expect(transcript.estimateTokens(1)).toBe(1 + OVERHEAD);
  });

  it('counts the content of system and user messages plus the per-message overhead', () => {
    const transcript = new Transcript(0);
    transcript.append({ role: 'system', content: text(3) });
    expect(transcript.estimateTokens()).toBe(3 + OVERHEAD);
    transcript.append({ role: 'user', content: text(5) });
    expect(transcript.estimateTokens()).toBe(3 + 5 + 2 * OVERHEAD);
  });

  it('counts an assistant message with null content and no tool calls as overhead only', () => {
    const transcript = new Transcript(0);
    transcript.append({ role: 'assistant', content: null });
    expect(transcript.estimateTokens()).toBe(OVERHEAD);
  });

  it("counts an assistant message's text and every tool call's id, name and arguments", () => {
    const transcript = new Transcript(0);
    transcript.append({
      role: 'assistant',
      content: text(2),
      toolCalls: [
        { id: 'call', name: 'look', arguments: '{"a":1}' }, // 4 + 4 + 7 chars
        { id: 'c2', name: 'get', arguments: '{}' }, // 2 + 3 + 2 chars
      ],
    });
    expect(transcript.estimateTokens()).toBe(Math.ceil((8 + 15 + 7) / CHARS_PER_TOKEN_ESTIMATE) + OVERHEAD);
  });

  it('counts tool calls of an assistant message without text', () => {
    const transcript = new Transcript(0);
    transcript.append({
      role: 'assistant',
      content: null,
      toolCalls: [{ id: text(1), name: text(1), arguments: text(2) }],
    });
    expect(transcript.estimateTokens()).toBe(4 + OVERHEAD);
  });

  it("counts a tool result's content and the id it answers", () => {
    const transcript = new Transcript(0);
    transcript.append({ role: 'tool', toolCallId: text(1), content: text(6) });
    expect(transcript.estimateTokens()).toBe(7 + OVERHEAD);
  });

  it('combines fixed chars, every role and extra chars in one estimate', () => {
    const transcript = new Transcript(text(10).length);
    transcript.append({ role: 'system', content: text(1) });
    transcript.append({ role: 'user', content: text(2) });
    transcript.append({ role: 'assistant', content: null, toolCalls: [{ id: 'ab', name: 'cd', arguments: text(1) }] });
    transcript.append({ role: 'tool', toolCallId: 'ab', content: 'cd' });
    expect(transcript.estimateTokens(text(4).length)).toBe(10 + 1 + 2 + 2 + 1 + 4 + 4 * OVERHEAD);
  });

  it('appends in order and keeps the very message objects', () => {
    const transcript = new Transcript(0);
    const messages: Message[] = [
      { role: 'system', content: 's' },
      { role: 'user', content: 'u' },
      { role: 'assistant', content: null, toolCalls: [{ id: '1', name: 'n', arguments: '{}' }] },
      { role: 'tool', toolCallId: '1', content: 't' },
      { role: 'assistant', content: 'done' },
    ];
    for (const message of messages) transcript.append(message);
    expect(transcript.messages).toHaveLength(messages.length);
    messages.forEach((message, index) => expect(transcript.messages[index]).toBe(message));
  });

  it('grows by at least the overhead with every appended message of any role', () => {
    const call = fc.record({ id: fc.string(), name: fc.string(), arguments: fc.string() });
    const message: fc.Arbitrary<Message> = fc.oneof(
      fc.record({ role: fc.constant('system' as const), content: fc.string() }),
      fc.record({ role: fc.constant('user' as const), content: fc.string() }),
      fc.record({
        role: fc.constant('assistant' as const),
        content: fc.option(fc.string(), { nil: null }),
        toolCalls: fc.option(fc.array(call), { nil: undefined }),
      }),
      fc.record({ role: fc.constant('tool' as const), toolCallId: fc.string(), content: fc.string() }),
    );
    fc.assert(
      fc.property(fc.nat({ max: 10_000 }), fc.array(message, { maxLength: 20 }), (fixedChars, messages) => {
        const transcript = new Transcript(fixedChars);
        let previous = transcript.estimateTokens();
        for (const appended of messages) {
          transcript.append(appended);
          const next = transcript.estimateTokens();
          expect(next).toBeGreaterThanOrEqual(previous + OVERHEAD);
          previous = next;
        }
      }),
    );
  });
});

describe('Transcript snapshot', () => {
  it('hands out a frozen copy of frozen messages that later appends do not change', () => {
    const transcript = new Transcript(0);
    transcript.append({ role: 'user', content: 'goal' });
    transcript.append({ role: 'assistant', content: null, toolCalls: [{ id: 'c1', name: 'lookup', arguments: '{}' }] });
    const first = transcript.snapshot();
    expect(transcript.snapshot()).toBe(first);
    transcript.append({ role: 'tool', toolCallId: 'c1', content: 'result' });

    expect(first).toHaveLength(2);
    expect(transcript.snapshot()).toHaveLength(3);
    expect(Object.isFrozen(first)).toBe(true);
    expect(() => (first as unknown[]).push({ role: 'user', content: 'injected' })).toThrow(TypeError);
    const assistant = first[1] as unknown as { toolCalls: { id: string }[] };
    expect(() => {
      (first[0] as { content: string }).content = 'edited';
    }).toThrow(TypeError);
    expect(() => {
      (assistant.toolCalls[0] as { id: string }).id = 'other';
    }).toThrow(TypeError);
    expect(transcript.messages[0]).toEqual({ role: 'user', content: 'goal' });
  });
});
