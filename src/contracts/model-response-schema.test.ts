import { describe, expect, it } from 'vitest';
import { isWellFormedResponse, modelResponseSchema, shapeProblems } from './model-response-schema.js';

const usage = { inputTokens: 10, outputTokens: 2 };
const call = { id: 'c1', name: 'lookup', arguments: '{}' };

const SHAPES: [string, unknown][] = [
  ['a text reply', { text: 'done', toolCalls: [], usage }],
  ['tool calls and no text', { text: null, toolCalls: [call, { ...call, id: 'c2' }], usage }],
  [
    'extra fields (kept out of the check)',
    { text: 'x', toolCalls: [], usage: { ...usage, cachedInputTokens: 3 }, raw: {} },
  ],
  [
    'response metadata',
    { text: 'x', toolCalls: [], usage, metadata: { id: 'r1', model: 'm-2025', finishReason: 'length' } },
  ],
  ['metadata that is null', { text: 'x', toolCalls: [], usage, metadata: null }],
  ['an unknown finish reason', { text: 'x', toolCalls: [], usage, metadata: { finishReason: 'tool-calls' } }],
  ['a numeric response id', { text: 'x', toolCalls: [], usage, metadata: { id: 7 } }],
  ['no text field', { toolCalls: [], usage }],
  ['a number for text', { text: 1, toolCalls: [], usage }],
  ['tool calls not an array', { text: null, toolCalls: {}, usage }],
  ['a tool call without arguments', { text: null, toolCalls: [{ id: 'c1', name: 'lookup' }], usage }],
  ['a tool call that is null', { text: null, toolCalls: [null], usage }],
  ['usage missing', { text: 'x', toolCalls: [] }],
  ['negative tokens', { text: 'x', toolCalls: [], usage: { inputTokens: -1, outputTokens: 0 } }],
  ['fractional tokens', { text: 'x', toolCalls: [], usage: { inputTokens: 1.5, outputTokens: 0 } }],
  ['NaN tokens', { text: 'x', toolCalls: [], usage: { inputTokens: Number.NaN, outputTokens: 0 } }],
  ['tokens past the safe integers', { text: 'x', toolCalls: [], usage: { inputTokens: 2 ** 53, outputTokens: 0 } }],
  ['1e300 tokens', { text: 'x', toolCalls: [], usage: { inputTokens: 1e300, outputTokens: 0 } }],
  ['tokens as strings', { text: 'x', toolCalls: [], usage: { inputTokens: '10', outputTokens: '2' } }],
  ['null', null],
  ['a string', 'done'],
];

describe('isWellFormedResponse', () => {
  it.each(SHAPES)('agrees with the zod schema on %s', (_label, value) => {
    expect(isWellFormedResponse(value)).toBe(shapeProblems(modelResponseSchema, value) === null);
  });

  it('accepts the well-formed shapes and refuses the rest', () => {
    expect(SHAPES.filter(([, value]) => isWellFormedResponse(value)).map(([label]) => label)).toEqual([
      'a text reply',
      'tool calls and no text',
      'extra fields (kept out of the check)',
      'response metadata',
      'metadata that is null',
      'an unknown finish reason',
      'a numeric response id',
    ]);
  });
});
