import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { checkMessages } from '../conversation/prior-conversation.js';
import type { Message } from '../../contracts/model.js';
import { Transcript } from '../runtime/transcript.js';
import { observationIdOf, requestTokens, trimMessages, unitsOf, type TrimOptions } from './trim-transcript.js';
import { DROPPED_RESULT_PREFIX, DROPPED_TURNS_NOTE, droppedResultMarker, MEMORY_PREFIX } from '../prompts.js';

const result = (n: number) => `result ${n}: ${'r'.repeat(400)}`;

/** system, goal, then `turns` tool turns (one call each, a ~400-char result), optionally a final reply. */
function conversation(turns: number): Message[] {
  const messages: Message[] = [
    { role: 'system', content: 'Be brief.' },
    { role: 'user', content: 'Investigate.' },
  ];
  for (let n = 1; n <= turns; n++) {
    messages.push({
      role: 'assistant',
      content: null,
      toolCalls: [{ id: `c${n}`, name: 'lookup', arguments: `{"id":"R-${n}"}` }],
    });
    messages.push({ role: 'tool', toolCallId: `c${n}`, content: result(n) });
  }
  return messages;
}

const options = (ceilingTokens: number, overrides: Partial<TrimOptions> = {}): TrimOptions => ({
  ceilingTokens,
  keepTurns: 2,
  fixedChars: 0,
  taskMessage: null,
  ...overrides,
});

describe('trimMessages', () => {
  it('leaves a request under the ceiling alone', () => {
    const messages = conversation(3);
    const trimmed = trimMessages(messages, options(10_000));
    expect(trimmed).toMatchObject({ fits: true, resultsDropped: [], messagesDropped: 0 });
    expect(trimmed.messages).toEqual(messages);
    expect(trimmed.tokensAfter).toBe(trimmed.tokensBefore);
  });

  it('first replaces older tool results with markers naming the tool, call and observation, oldest first', () => {
    const messages = conversation(6);
    const full = requestTokens(messages);
    // Room for all but about one and a half results: two markers are needed.
    const trimmed = trimMessages(messages, options(full - 150));
    expect(trimmed.fits).toBe(true);
    expect(trimmed.messagesDropped).toBe(0);
    expect(trimmed.resultsDropped).toEqual([
      { callId: 'c1', tool: 'lookup', observationId: observationIdOf(result(1)) },
      { callId: 'c2', tool: 'lookup', observationId: observationIdOf(result(2)) },
    ]);
    expect(trimmed.messages[3]).toEqual({
      role: 'tool',
      toolCallId: 'c1',
      content: `[loopstate: tool result of lookup (call c1) dropped to fit the context; observation ${observationIdOf(result(1))}]`,
    });
    expect(trimmed.messages.slice(-8)).toEqual(messages.slice(-8));
    expect(checkMessages(trimmed.messages).issues).toEqual([]);
  });

  it('then drops whole older turns (a call with its result), leaving one note, and never an orphan', () => {
    const messages = conversation(8);
    const trimmed = trimMessages(messages, options(420));
    expect(trimmed.fits).toBe(true);
    expect(trimmed.messagesDropped).toBeGreaterThan(0);
    expect(trimmed.messagesDropped % 2).toBe(0);
    expect(trimmed.messages.slice(0, 3)).toEqual([
      messages[0],
      messages[1],
      { role: 'user', content: DROPPED_TURNS_NOTE },
    ]);
    expect(trimmed.messages.filter((message) => message.content === DROPPED_TURNS_NOTE)).toHaveLength(1);
    expect(checkMessages(trimmed.messages).issues).toEqual([]);
    expect(trimmed.tokensAfter).toBe(requestTokens(trimmed.messages));
    expect(trimmed.tokensAfter).toBeLessThanOrEqual(420);
  });

  it('trims the recent turns only when the older ones were not enough, and never the latest turn', () => {
    const messages = conversation(4);
    const trimmed = trimMessages(messages, options(1));
    expect(trimmed.fits).toBe(false);
    // Instructions, goal, a note, and the latest call with its unanswered result, untouched.
    expect(trimmed.messages).toEqual([
      messages[0],
      messages[1],
      { role: 'user', content: DROPPED_TURNS_NOTE },
      ...messages.slice(-2),
    ]);
    expect(trimmed.messagesDropped).toBe(6);
  });

  it('keeps the task message and a memory wherever they are', () => {
    const task: Message = { role: 'user', content: 'Current task: verify.' };
    const memory: Message = { role: 'user', content: `${MEMORY_PREFIX}\nR-1 was fine.` };
    const messages = [...conversation(2), memory, task, ...conversation(3).slice(2)];
    const trimmed = trimMessages(messages, options(1, { taskMessage: task, keepTurns: 1 }));
    expect(trimmed.messages).toContain(task);
    expect(trimmed.messages).toContain(memory);
    expect(checkMessages(trimmed.messages).issues).toEqual([]);
  });

  it('never splits an assistant message from the calls it still waits on', () => {
    const messages = conversation(3);
    // c1 is answered by neither a result nor a note: it must stay with the rest of its turn.
    messages.splice(2, 2, {
      role: 'assistant',
      content: null,
      toolCalls: [{ id: 'c1', name: 'lookup', arguments: '{}' }],
    });
    const trimmed = trimMessages(messages, options(1, { keepTurns: 1 }));
    expect(trimmed.messages).toContain(messages[2]);
  });
});

describe('Transcript.replaceMessages', () => {
  it('keeps the running size exact after a trim', () => {
    const transcript = new Transcript(120);
    for (const message of conversation(6)) transcript.append(message);
    const trimmed = trimMessages(transcript.messages, options(400, { fixedChars: transcript.fixedChars }));
    const held = transcript.messages;
    transcript.replaceMessages(trimmed.messages);
    const fresh = new Transcript(120);
    for (const message of trimmed.messages) fresh.append(message);
    expect(transcript.estimateTokens()).toBe(fresh.estimateTokens());
    expect(transcript.estimateTokens()).toBe(trimmed.tokensAfter);
    expect(transcript.messages).toBe(held);
  });
});

/**
 * The trim as it was first written, reassembling and recounting the whole request after every step: the
 * reference the running totals of `trimMessages` must agree with exactly.
 */
function referenceTrim(messages: readonly Message[], options: TrimOptions) {
  const units = unitsOf(messages, options);
  const resultsDropped: { callId: string; tool: string; observationId: string }[] = [];
  let messagesDropped = 0;
  const assemble = () => {
    const out: Message[] = [];
    let noted = false;
    for (const unit of units) {
      if (unit.dropped) {
        if (!noted) out.push({ role: 'user', content: DROPPED_TURNS_NOTE });
        noted = true;
        continue;
      }
      noted = false;
      out.push(...unit.messages);
    }
    return out;
  };
  const mark = (unit: (typeof units)[number]) => () => {
    const head = unit.messages[0];
    if (head?.role !== 'assistant') return;
    const calls = new Map((head.toolCalls ?? []).map((call) => [call.id, call]));
    unit.messages = unit.messages.map((message) => {
      if (message.role !== 'tool' || message.content.startsWith(DROPPED_RESULT_PREFIX)) return message;
      const call = calls.get(message.toolCallId) ?? { id: message.toolCallId, name: 'a tool' };
      const observationId = observationIdOf(message.content);
      resultsDropped.push({ callId: call.id, tool: call.name, observationId });
      return { ...message, content: droppedResultMarker(call.name, call.id, observationId) };
    });
  };
  const drop = (unit: (typeof units)[number]) => () => {
    if (unit.dropped) return;
    unit.dropped = true;
    messagesDropped += unit.messages.length;
  };
  const isExchange = (unit: (typeof units)[number]) => unit.messages[0]?.role === 'assistant';
  const older = units.filter((unit) => !unit.pinned && !unit.recent);
  const recent = units.filter((unit) => !unit.pinned && unit.recent);
  const steps = [
    ...older.filter(isExchange).map(mark),
    ...older.map(drop),
    ...recent.flatMap((unit) => (isExchange(unit) ? [mark(unit), drop(unit)] : [drop(unit)])),
  ];
  let current = [...messages];
  let tokens = requestTokens(current, options.fixedChars);
  for (const step of steps) {
    if (tokens <= options.ceilingTokens) break;
    step();
    current = assemble();
    tokens = requestTokens(current, options.fixedChars);
  }
  return { messages: current, tokensAfter: tokens, resultsDropped, messagesDropped };
}

/** Random conversations: turns of 0–3 calls, results short, long, missing or already marked, notes, memories, replies. */
const messageLists = fc
  .array(
    fc.oneof(
      fc.record({
        kind: fc.constant('turn' as const),
        calls: fc.integer({ min: 0, max: 3 }),
        answered: fc.integer({ min: 0, max: 3 }),
        size: fc.integer({ min: 0, max: 300 }),
        marked: fc.boolean(),
        text: fc.option(fc.string({ maxLength: 40 }), { nil: null }),
      }),
      fc.record({ kind: fc.constantFrom('user' as const, 'note' as const, 'memory' as const, 'task' as const) }),
    ),
    { maxLength: 40 },
  )
  .map((parts) => {
    const messages: Message[] = [
      { role: 'system', content: 'Be brief.' },
      { role: 'user', content: 'Go.' },
    ];
    let task: Message | null = null;
    parts.forEach((part, n) => {
      if (part.kind === 'turn') {
        const calls = Array.from({ length: part.calls }, (_, k) => ({
          id: `c${n}-${k}`,
          name: 'lookup',
          arguments: '{}',
        }));
        messages.push({ role: 'assistant', content: part.text, ...(calls.length > 0 ? { toolCalls: calls } : {}) });
        for (const call of calls.slice(0, part.answered)) {
          const content = part.marked ? droppedResultMarker('lookup', call.id, 'abc') : 'v'.repeat(part.size);
          messages.push({ role: 'tool', toolCallId: call.id, content });
        }
      } else if (part.kind === 'note') messages.push({ role: 'user', content: DROPPED_TURNS_NOTE });
      else if (part.kind === 'memory') messages.push({ role: 'user', content: `${MEMORY_PREFIX}\nearlier` });
      else {
        const message: Message = { role: 'user', content: `task ${n}` };
        messages.push(message);
        if (part.kind === 'task') task = message;
      }
    });
    return { messages, task };
  });

describe('trimMessages, side by side with recounting after every step', () => {
  it('gives the same messages, counts and tokens as reassembling the request after each step', () => {
    fc.assert(
      fc.property(
        messageLists,
        fc.integer({ min: 0, max: 3_000 }),
        fc.integer({ min: 0, max: 5 }),
        fc.integer({ min: 0, max: 200 }),
        ({ messages, task }, ceilingTokens, keepTurns, fixedChars) => {
          const trimOptions = { ceilingTokens, keepTurns, fixedChars, taskMessage: task };
          const trimmed = trimMessages(messages, trimOptions);
          const reference = referenceTrim(messages, trimOptions);
          expect(trimmed.messages).toEqual(reference.messages);
          expect(trimmed.tokensAfter).toBe(reference.tokensAfter);
          expect(trimmed.resultsDropped).toEqual(reference.resultsDropped);
          expect(trimmed.messagesDropped).toBe(reference.messagesDropped);
          // The running totals are the request's real size.
          expect(trimmed.tokensAfter).toBe(requestTokens(trimmed.messages, fixedChars));
        },
      ),
      { numRuns: 500 },
    );
  });
});
