import { describe, expect, it } from 'vitest';
import { CONTEXT_SUMMARY_OUTPUT_TOKENS, DEFAULT_LIMITS } from '../constants.js';
import { CONTEXT_SUMMARY_PROMPT, MEMORY_PREFIX } from '../prompts.js';
import { checkMessages } from '../conversation/prior-conversation.js';
import type { Message } from '../../contracts/model.js';
import { splitOlderTurns, summaryRefusal, summaryRequest } from './summarize-transcript.js';
import { requestTokens } from './trim-transcript.js';

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
    messages.push({ role: 'tool', toolCallId: `c${n}`, content: `result ${n}: ${'r'.repeat(800)}` });
  }
  return messages;
}

const usage = { inputTokens: 0, outputTokens: 0, costUsd: 0, modelCalls: 0, toolCalls: 0 };

describe('splitOlderTurns', () => {
  it('condenses what lies before the last keepTurns turns into one memory just before them', () => {
    const messages = conversation(5);
    const { older, rebuild } = splitOlderTurns(messages, { keepTurns: 2, taskMessage: null });
    expect(older).toEqual(messages.slice(2, 8));
    const rebuilt = rebuild('R-1..R-3 looked up.');
    expect(rebuilt).toEqual([
      messages[0],
      messages[1],
      { role: 'user', content: `${MEMORY_PREFIX}\nR-1..R-3 looked up.` },
      ...messages.slice(8),
    ]);
    expect(checkMessages(rebuilt).issues).toEqual([]);
  });

  it('folds an earlier memory into the next one, so there is only ever one', () => {
    const first = splitOlderTurns(conversation(5), { keepTurns: 2, taskMessage: null }).rebuild('first memory');
    const more = [...first, ...conversation(7).slice(12)];
    const { older, rebuild } = splitOlderTurns(more, { keepTurns: 2, taskMessage: null });
    expect(older[0]).toEqual({ role: 'user', content: `${MEMORY_PREFIX}\nfirst memory` });
    expect(rebuild('second').filter((message) => message.content?.startsWith(MEMORY_PREFIX))).toHaveLength(1);
  });
});

describe('summaryRequest', () => {
  it('sends the fixed prompt and the older turns as text, cut to stay within the ceiling', () => {
    const older = conversation(10).slice(2);
    const request = summaryRequest(older, 600);
    expect(request[0]).toEqual({ role: 'system', content: CONTEXT_SUMMARY_PROMPT });
    expect(request[1]?.content).toContain('called lookup({"id":"R-1"}) [call c1]');
    expect(request[1]?.content).toContain('result of lookup [call c10]: result 10');
    expect(request[1]?.content).toContain('…[cut]');
    expect(requestTokens(request)).toBeLessThanOrEqual(600);
  });
});

describe('summaryRefusal', () => {
  const LIMITS = {
    ...DEFAULT_LIMITS,
    maxStepsPerTask: DEFAULT_LIMITS.maxSteps,
    maxToolCalls: DEFAULT_LIMITS.maxSteps * DEFAULT_LIMITS.maxToolCallsPerReply,
  };
  const price = { inputPerMillion: 1, outputPerMillion: 1 };
  it('lets a summary the budgets can pay for through', () => {
    expect(summaryRefusal({ usage, limits: LIMITS, price, summaryTokens: 2_000, nextRequestTokens: 1_000 })).toBeNull();
  });

  it.each([
    ['input tokens', { ...LIMITS, maxInputTokens: 2_999 }, 'limits.maxInputTokens (2999)'],
    ['output tokens', { ...LIMITS, maxOutputTokens: CONTEXT_SUMMARY_OUTPUT_TOKENS - 1 }, 'limits.maxOutputTokens'],
    ['cost', { ...LIMITS, maxCostUsd: 0.003 }, 'limits.maxCostUsd (0.003)'],
  ])('refuses a summary that %s cannot pay for, naming the limit', (_, limits, named) => {
    expect(summaryRefusal({ usage, limits, price, summaryTokens: 2_000, nextRequestTokens: 1_000 })).toContain(named);
  });
});
