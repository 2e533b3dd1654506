import { describe, expect, it } from 'vitest';
import { knownMetadata, modelFacts } from './model-facts.js';

describe('modelFacts', () => {
  it('keeps a well-formed provider, server and settings', () => {
    expect(
      modelFacts({
        provider: 'anthropic',
        server: { address: 'api.anthropic.com', port: 443 },
        settings: { temperature: 0, stopSequences: ['END'], reasoningEffort: 'low' },
      }),
    ).toEqual({
      provider: 'anthropic',
      server: { address: 'api.anthropic.com', port: 443 },
      settings: { temperature: 0, stopSequences: ['END'], reasoningEffort: 'low' },
    });
  });

  it('leaves out what a custom model got wrong, field by field, so a trace never carries it', () => {
    const odd = {
      provider: 42,
      server: { address: 'host', port: 70_000 },
      settings: {
        temperature: Number.NaN,
        topP: '0.9',
        maxOutputTokens: 100,
        stopSequences: ['a', 1],
        reasoningEffort: 'max',
      },
    } as unknown as Parameters<typeof modelFacts>[0];
    expect(modelFacts(odd)).toEqual({ server: { address: 'host' }, settings: { maxOutputTokens: 100 } });
    expect(modelFacts({ provider: ' ', server: { address: '' } as never, settings: {} })).toEqual({});
  });

  it('a getter that throws says nothing', () => {
    const model = {
      get provider(): string {
        throw new Error('no');
      },
    };
    expect(modelFacts(model)).toEqual({});
  });
});

describe('knownMetadata', () => {
  it('keeps only the contract fields, and nothing when none is set', () => {
    const metadata = { id: 'r1', finishReason: 'length', extra: 'kept out' } as never;
    expect(knownMetadata(metadata)).toEqual({ metadata: { id: 'r1', finishReason: 'length' } });
    expect(knownMetadata({})).toEqual({});
    expect(knownMetadata(undefined)).toEqual({});
  });
});

describe('knownMetadata on what a custom adapter may send', () => {
  it.each([
    ['a number for the id', { id: 7, model: 'm' }, { metadata: { model: 'm' } }],
    [
      "a finish reason in the provider's own word",
      { finishReason: 'max_tokens' },
      { metadata: { finishReason: 'other', rawFinishReason: 'max_tokens' } },
    ],
    [
      'an unknown finish reason beside a raw one',
      { finishReason: 'tool-calls', rawFinishReason: 'tool_use' },
      { metadata: { finishReason: 'other', rawFinishReason: 'tool_use' } },
    ],
    ['null', null, {}],
    ['a string', 'stop', {}],
    ['only wrong types', { id: {}, finishReason: 3 }, {}],
  ])('keeps what fits and drops the rest: %s', (_label, metadata, expected) => {
    expect(knownMetadata(metadata)).toEqual(expected);
  });

  it('never throws, even on a throwing getter', () => {
    const hostile = Object.defineProperty({}, 'id', {
      enumerable: true,
      get() {
        throw new Error('no');
      },
    });
    expect(knownMetadata(hostile)).toEqual({});
  });
});
