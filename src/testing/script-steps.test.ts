import { describe, expect, it } from 'vitest';
import { LoopstateError } from '../contracts/errors.js';
import {
  DEFAULT_SCRIPTED_USAGE,
  emptyReply,
  modelError,
  modelErrorKindForStatus,
  reply,
  toolCall,
} from './script-steps.js';

describe('reply and emptyReply', () => {
  it('builds a text reply with the default usage', () => {
    expect(reply('done')).toEqual({
      type: 'response',
      text: 'done',
      toolCalls: [],
      usage: { inputTokens: 100, outputTokens: 20 },
    });
    expect(DEFAULT_SCRIPTED_USAGE).toEqual({ inputTokens: 100, outputTokens: 20 });
  });

  it('merges a partial usage over the default, treating an undefined count as unset', () => {
    expect(reply('x', { usage: { outputTokens: 5_000 } }).usage).toEqual({ inputTokens: 100, outputTokens: 5_000 });
    expect(reply('x', { usage: { inputTokens: undefined, outputTokens: 0 } }).usage).toEqual({
      inputTokens: 100,
      outputTokens: 0,
    });
  });

  it('rejects negative or fractional usage when the script is built', () => {
    expect(() => reply('x', { usage: { inputTokens: -1 } })).toThrow(
      'usage.inputTokens must be an integer >= 0, got -1',
    );
    expect(() => emptyReply({ usage: { outputTokens: 1.5 } })).toThrow(LoopstateError);
  });

  it('rejects a non-string reply, pointing at emptyReply', () => {
    expect(() => reply(null as unknown as string)).toThrow(/use emptyReply\(\)/);
  });

  it('builds an empty reply with no text and no tool calls', () => {
    expect(emptyReply()).toEqual({ type: 'response', text: null, toolCalls: [], usage: DEFAULT_SCRIPTED_USAGE });
  });
});

describe('toolCall', () => {
  it('sends object arguments as JSON and leaves the id to be filled when played', () => {
    expect(toolCall('get_order_status', { order_id: 'O-101' })).toEqual({
      type: 'response',
      text: null,
      toolCalls: [{ id: null, name: 'get_order_status', arguments: '{"order_id":"O-101"}' }],
      usage: DEFAULT_SCRIPTED_USAGE,
    });
  });

  it('sends string arguments verbatim, so malformed JSON can be scripted', () => {
    expect(toolCall('search', '{"q": ').toolCalls[0]?.arguments).toBe('{"q": ');
  });

  it('takes an explicit id, text and usage', () => {
    const step = toolCall('a', {}, { id: 'call_custom', text: 'Let me check.', usage: { inputTokens: 7 } });
    expect(step).toMatchObject({
      text: 'Let me check.',
      toolCalls: [{ id: 'call_custom' }],
      usage: { inputTokens: 7, outputTokens: 20 },
    });
  });

  it('builds parallel calls in one reply', () => {
    const step = toolCall(
      [
        { name: 'a', args: {} },
        { name: 'b', args: 'raw', id: 'call_b' },
      ],
      { usage: { outputTokens: 1 } },
    );
    expect(step).toMatchObject({
      toolCalls: [
        { id: null, name: 'a', arguments: '{}' },
        { id: 'call_b', name: 'b', arguments: 'raw' },
      ],
      usage: { outputTokens: 1 },
    });
  });

  it('rejects an empty parallel list and a call without a name', () => {
    expect(() => toolCall([])).toThrow(/at least one call/);
    expect(() =>
      toolCall([
        { name: 'ok', args: {} },
        { name: '', args: {} },
      ]),
    ).toThrow('toolCall: call 1 needs a non-empty name');
  });
});

describe('modelError', () => {
  it.each([
    [429, 'rate_limited'],
    [500, 'server'],
    [503, 'server'],
    [400, 'bad_request'],
    [422, 'bad_request'],
    [404, 'bad_request'],
    [401, 'auth'],
    [403, 'auth'],
    [408, 'timeout'],
    [302, 'unknown'],
  ] as const)('maps HTTP %i to %s', (status, kind) => {
    expect(modelError({ status })).toEqual({
      type: 'error',
      kind,
      status,
      message: `scripted model error: HTTP ${status} (${kind})`,
    });
    expect(modelErrorKindForStatus(status)).toBe(kind);
  });

  it('keeps retryAfterMs and a custom message', () => {
    expect(modelError({ status: 429, retryAfterMs: 50, message: 'slow down' })).toEqual({
      type: 'error',
      kind: 'rate_limited',
      status: 429,
      retryAfterMs: 50,
      message: 'slow down',
    });
  });

  it('builds transport failures from a kind alone', () => {
    expect(modelError({ kind: 'timeout' })).toEqual({
      type: 'error',
      kind: 'timeout',
      message: 'scripted model error: (timeout)',
    });
    expect(modelError({ kind: 'connection' })).toMatchObject({ kind: 'connection' });
  });

  it('lets an explicit kind win over the status mapping', () => {
    expect(modelError({ status: 500, kind: 'bad_request' })).toMatchObject({ kind: 'bad_request', status: 500 });
  });

  it('rejects impossible statuses and delays when the script is built', () => {
    expect(() => modelError({ status: 42 })).toThrow(
      'modelError: status must be an HTTP status code (100-599), got 42',
    );
    expect(() => modelError({ status: 429, retryAfterMs: -5 })).toThrow(/retryAfterMs must be a finite number >= 0/);
    expect(() => modelError({ status: 429, retryAfterMs: Number.NaN })).toThrow(LoopstateError);
  });
});
