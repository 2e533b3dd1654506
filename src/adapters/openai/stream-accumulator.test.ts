import { describe, expect, it } from 'vitest';
import type { ModelProgress } from '../../contracts/model.js';
import { ChatStreamAccumulator } from './stream-accumulator.js';

const chunk = (delta: Record<string, unknown>, finish: string | null = null) => ({
  choices: [{ index: 0, delta, finish_reason: finish }],
});

describe('ChatStreamAccumulator', () => {
  it('folds text and parallel tool calls by index, and takes the usage of the last chunk (choices: [])', () => {
    const progress: ModelProgress[] = [];
    const accumulator = new ChatStreamAccumulator((event) => progress.push(event));
    accumulator.add(chunk({ role: 'assistant', content: '' }));
    accumulator.add(chunk({ content: 'Look' }));
    accumulator.add(chunk({ content: 'ing.' }));
    accumulator.add(chunk({ tool_calls: [{ index: 0, id: 'a', function: { name: 'get', arguments: '' } }] }));
    accumulator.add(chunk({ tool_calls: [{ index: 1, id: 'b', function: { name: 'put', arguments: '{"x"' } }] }));
    accumulator.add(chunk({ tool_calls: [{ index: 0, function: { arguments: '{"id":1}' } }] }));
    accumulator.add(chunk({ tool_calls: [{ index: 1, function: { arguments: ':2}' } }] }));
    expect(accumulator.finished).toBe(false);
    accumulator.add(chunk({}, 'tool_calls'));
    accumulator.add({
      choices: [],
      usage: { prompt_tokens: 9, completion_tokens: 3, prompt_tokens_details: { cached_tokens: 4 } },
    });
    expect(accumulator.finished).toBe(true);
    expect(accumulator.outcome()).toEqual({
      text: 'Looking.',
      refusal: null,
      finishReason: 'tool_calls',
      toolCalls: [
        { id: 'a', name: 'get', arguments: '{"id":1}' },
        { id: 'b', name: 'put', arguments: '{"x":2}' },
      ],
      usage: { prompt_tokens: 9, completion_tokens: 3, prompt_tokens_details: { cached_tokens: 4 } },
      id: null,
      model: null,
    });
    expect(progress).toEqual([
      { type: 'text_delta', text: 'Look' },
      { type: 'text_delta', text: 'ing.' },
      { type: 'tool_call_started', callId: 'a', name: 'get' },
      { type: 'tool_call_started', callId: 'b', name: 'put' },
    ]);
  });

  it('tolerates tool-call deltas without index: a new id starts a call, no id continues the last', () => {
    const accumulator = new ChatStreamAccumulator();
    accumulator.add(chunk({ tool_calls: [{ id: 'a', function: { name: 'get', arguments: '{"id"' } }] }));
    accumulator.add(chunk({ tool_calls: [{ function: { arguments: ':1}' } }] }));
    accumulator.add(chunk({ tool_calls: [{ id: 'b', function: { name: 'get', arguments: '{}' } }] }));
    accumulator.add(chunk({ tool_calls: [{ id: 'b', function: { arguments: '' } }] }));
    accumulator.add(chunk({}, 'tool_calls'));
    expect(accumulator.outcome().toolCalls).toEqual([
      { id: 'a', name: 'get', arguments: '{"id":1}' },
      { id: 'b', name: 'get', arguments: '{}' },
    ]);
  });

  it('a reply with no text is null, not an empty string, and a refusal is kept', () => {
    const accumulator = new ChatStreamAccumulator();
    accumulator.add(chunk({ role: 'assistant', content: '' }));
    accumulator.add(chunk({ refusal: "I can't" }));
    accumulator.add(chunk({ refusal: ' do that.' }, 'stop'));
    expect(accumulator.outcome()).toMatchObject({ text: null, refusal: "I can't do that.", usage: null });
  });
});

describe('ChatStreamAccumulator response id and model', () => {
  it('takes them from the first chunk that names them, ignoring empty ones', () => {
    const accumulator = new ChatStreamAccumulator();
    accumulator.add({ id: '', model: '', ...chunk({ role: 'assistant', content: '' }) });
    accumulator.add({ id: 'chatcmpl-1', model: 'gpt-4.1-mini-2025-04-14', ...chunk({ content: 'Hi' }) });
    accumulator.add({ id: 'chatcmpl-other', model: 'other', ...chunk({}, 'length') });
    expect(accumulator.outcome()).toMatchObject({
      id: 'chatcmpl-1',
      model: 'gpt-4.1-mini-2025-04-14',
      finishReason: 'length',
    });
  });
});
