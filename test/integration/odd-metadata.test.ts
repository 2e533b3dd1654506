/**
 * Metadata is for traces and warnings, never control flow: a custom model whose metadata is off the contract
 * (a number for an id, its provider's own finish reason) still completes, its metadata cleaned in the trace.
 */
import { describe, expect, it } from 'vitest';
import { createLoop, type Model } from 'loopstate';

describe('a custom model with odd metadata', () => {
  it('completes, and the trace keeps what fits the contract', async () => {
    const model: Model = {
      id: 'gpt-4.1-mini',
      generate: async () => ({
        text: 'done',
        toolCalls: [],
        usage: { inputTokens: 3, outputTokens: 1 },
        metadata: { id: 7, finishReason: 'max_tokens' } as never,
      }),
    };
    const result = await createLoop({ model }).run({ goal: 'Say done' });
    expect(result.stopReason).toBe('completed');
    const stepEnd = result.trace.find((event) => event.type === 'step-end');
    expect(stepEnd?.type === 'step-end' ? stepEnd.metadata : null).toEqual({
      finishReason: 'other',
      rawFinishReason: 'max_tokens',
    });
    // "other" is not a cut at the output limit: no warning.
    expect(result.warnings.filter((warning) => warning.includes('output limit'))).toEqual([]);
  });
});
