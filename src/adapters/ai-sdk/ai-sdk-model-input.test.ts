/**
 * `aiSdkModel`'s bad input: what it refuses before any call (a model of another specification, a model missing a
 * field, unknown or ill-typed options), naming the field, and the settings it reports for the spans.
 */
import { MockLanguageModelV3 } from 'ai/test';
import { describe, expect, it } from 'vitest';
import { LoopConfigError } from '../../contracts/errors.js';
import { aiSdkModel, type AiSdkLanguageModel } from './ai-sdk-model.js';

describe('aiSdkModel bad input', () => {
  it.each([
    ['not an object', 'gpt-4.1-mini', 'aiSdkModel.languageModel'],
    [
      'a LanguageModelV1 (AI SDK 4)',
      { specificationVersion: 'v1', provider: 'openai.chat', modelId: 'gpt-4o' },
      'AI SDK 4',
    ],
    [
      'a V4 model (AI SDK 7)',
      { specificationVersion: 'v4', provider: 'openai.chat', modelId: 'gpt-4o' },
      '"v4" is not supported',
    ],
    [
      'no modelId',
      { specificationVersion: 'v3', provider: 'openai.chat', doGenerate() {}, doStream() {} },
      'languageModel.modelId',
    ],
    [
      'no doStream',
      { specificationVersion: 'v3', provider: 'openai.chat', modelId: 'm', doGenerate() {} },
      'languageModel.doStream',
    ],
  ])('refuses %s before any call, naming the field', (_, languageModel, named) => {
    expect(() => aiSdkModel(languageModel as unknown as AiSdkLanguageModel)).toThrow(LoopConfigError);
    expect(() => aiSdkModel(languageModel as unknown as AiSdkLanguageModel)).toThrow(named);
  });

  it('refuses unknown and ill-typed options, and reads undefined as the default', () => {
    const mock = new MockLanguageModelV3();
    expect(() => aiSdkModel(mock, { streaming: true } as never)).toThrow('aiSdkModel.streaming: unknown option');
    expect(() => aiSdkModel(mock, { settings: { temperature: 3 } })).toThrow('aiSdkModel.settings.temperature');
    expect(() => aiSdkModel(mock, { server: { address: '', port: 0 } })).toThrow('aiSdkModel.server');
    expect(() => aiSdkModel(mock, { stream: undefined, settings: { temperature: undefined } })).not.toThrow();
  });

  it('reports its own settings on the model, for the spans (gen_ai.request.*), and none when it has none', () => {
    const mock = new MockLanguageModelV3();
    expect(aiSdkModel(mock, { settings: { temperature: 0, maxOutputTokens: 800 } }).settings).toEqual({
      temperature: 0,
      maxOutputTokens: 800,
    });
    expect(aiSdkModel(mock).settings).toBeUndefined();
  });
});
