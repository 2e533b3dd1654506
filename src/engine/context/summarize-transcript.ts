/**
 * The `summarize` strategy: one call of the loop's own model condenses the turns older than the
 * last `keepTurns` into one memory message. The call is paid from the run's budgets, so it is
 * refused up front when they cannot pay for it (the caller then trims instead).
 */
import type { LoopLimits, Usage } from '../../../machines/types.js';
import { CHARS_PER_TOKEN_ESTIMATE, CONTEXT_SUMMARY_OUTPUT_TOKENS } from '../constants.js';
import { CONTEXT_SUMMARY_PROMPT, MEMORY_PREFIX, SUMMARY_CUT_MARKER } from '../prompts.js';
import type { ModelPrice } from '../../contracts/model.js';
import type { Message } from '../../contracts/model.js';
import { estimateRequestTokens } from '../runtime/transcript.js';
import { unitsOf } from './trim-transcript.js';

/**
 * The older part of a conversation, split from what stays as it is.
 * @example
 * const { older, rebuild } = splitOlderTurns(messages, { keepTurns: 4, taskMessage: null });
 */
export interface OlderTurns {
  /** Messages a summary would replace, in order. */
  older: Message[];
  /** The conversation with `older` replaced by one memory message holding `summary`. */
  rebuild(summary: string): Message[];
}

/**
 * Splits off the messages a summary may replace: everything `trim` could drop before touching
 * the recent turns, an earlier memory included (it is condensed again, so there is one memory).
 * The memory takes the place of the last of them, just before the recent turns.
 * @example
 * const { older } = splitOlderTurns(transcript.messages, { keepTurns: 4, taskMessage: transcript.taskMessage });
 */
export function splitOlderTurns(
  messages: readonly Message[],
  options: { keepTurns: number; taskMessage: Message | null },
): OlderTurns {
  const units = unitsOf(messages, options);
  const isMemory = (message: Message | undefined) =>
    message?.role === 'user' && message.content.startsWith(MEMORY_PREFIX);
  const condensed = units.map((unit) => !unit.recent && (!unit.pinned || isMemory(unit.messages[0])));
  const older = units.flatMap((unit, index) => (condensed[index] ? unit.messages : []));
  const last = condensed.lastIndexOf(true);
  return {
    older,
    rebuild: (summary) =>
      units.flatMap((unit, index) => {
        if (index === last) return [{ role: 'user', content: `${MEMORY_PREFIX}\n${summary}` }];
        return condensed[index] ? [] : unit.messages;
      }),
  };
}

function render(message: Message, toolNames: ReadonlyMap<string, string>): string {
  switch (message.role) {
    case 'assistant': {
      const calls = (message.toolCalls ?? [])
        .map((call) => `\n  called ${call.name}(${call.arguments}) [call ${call.id}]`)
        .join('');
      return `assistant: ${message.content ?? ''}${calls}`;
    }
    case 'tool':
      return `result of ${toolNames.get(message.toolCallId) ?? 'a tool'} [call ${message.toolCallId}]: ${message.content}`;
    default:
      return `${message.role}: ${message.content}`;
  }
}

/**
 * The summary call's messages: a fixed instruction and the older turns as text, cut so the
 * request itself stays within `ceilingTokens` (each long message keeps its start).
 * @example
 * const request = summaryRequest(older, 8_000); // [{ role: 'system', ... }, { role: 'user', ... }]
 */
export function summaryRequest(older: readonly Message[], ceilingTokens: number): Message[] {
  const toolNames = new Map<string, string>();
  for (const message of older)
    if (message.role === 'assistant') for (const call of message.toolCalls ?? []) toolNames.set(call.id, call.name);
  let parts = older.map((message) => render(message, toolNames));
  const framing = estimateRequestTokens(CONTEXT_SUMMARY_PROMPT.length, 2);
  const available = Number.isFinite(ceilingTokens)
    ? Math.max(0, (ceilingTokens - framing) * CHARS_PER_TOKEN_ESTIMATE - parts.length)
    : Infinity;
  const total = parts.reduce((sum, part) => sum + part.length + 1, 0);
  if (total > available) {
    // An equal share for every message; a short one keeps all of its text.
    const cut = SUMMARY_CUT_MARKER;
    const share = Math.max(cut.length, Math.floor(available / parts.length) - 1);
    parts = parts.map((part) => (part.length <= share ? part : `${part.slice(0, share - cut.length)}${cut}`));
  }
  return [
    { role: 'system', content: CONTEXT_SUMMARY_PROMPT },
    { role: 'user', content: parts.join('\n') },
  ];
}

/**
 * Why the run's budgets cannot pay for a summary call now, or null when they can. Counted: the
 * summary request's input, a reserve of `CONTEXT_SUMMARY_OUTPUT_TOKENS` for its reply, and the
 * request that follows it (estimated at its size after the summary).
 * @example
 * summaryRefusal({ usage, limits, price, summaryTokens: 3_000, nextRequestTokens: 2_000 }) // null, or 'maxCostUsd ...'
 */
export function summaryRefusal(input: {
  usage: Usage;
  limits: LoopLimits;
  price: ModelPrice | undefined;
  summaryTokens: number;
  nextRequestTokens: number;
}): string | null {
  const { usage, limits, price, summaryTokens, nextRequestTokens } = input;
  const inputTokens = usage.inputTokens + summaryTokens + nextRequestTokens;
  if (inputTokens > limits.maxInputTokens)
    return `limits.maxInputTokens (${limits.maxInputTokens}) cannot pay for it: ~${inputTokens} input tokens with the next request`;
  const outputTokens = usage.outputTokens + CONTEXT_SUMMARY_OUTPUT_TOKENS;
  if (outputTokens > limits.maxOutputTokens)
    return `limits.maxOutputTokens (${limits.maxOutputTokens}) cannot pay for it: ${usage.outputTokens} used + ${CONTEXT_SUMMARY_OUTPUT_TOKENS} reserved for the summary`;
  if (price !== undefined) {
    const costUsd =
      usage.costUsd +
      ((summaryTokens + nextRequestTokens) * price.inputPerMillion +
        CONTEXT_SUMMARY_OUTPUT_TOKENS * price.outputPerMillion) /
        1_000_000;
    if (costUsd > limits.maxCostUsd)
      return `limits.maxCostUsd (${limits.maxCostUsd}) cannot pay for it: ~$${costUsd.toFixed(6)} with the next request`;
  }
  return null;
}
