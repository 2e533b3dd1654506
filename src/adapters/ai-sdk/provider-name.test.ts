import * as semconv from '@opentelemetry/semantic-conventions/incubating';
import { describe, expect, it } from 'vitest';
import { genAiProviderName, serverOf, serverOfModel } from './provider-name.js';

describe('genAiProviderName', () => {
  it.each([
    ['anthropic.messages', semconv.GEN_AI_PROVIDER_NAME_VALUE_ANTHROPIC],
    ['openai.chat', semconv.GEN_AI_PROVIDER_NAME_VALUE_OPENAI],
    ['openai.responses', semconv.GEN_AI_PROVIDER_NAME_VALUE_OPENAI],
    ['google.generative-ai', semconv.GEN_AI_PROVIDER_NAME_VALUE_GCP_GEMINI],
    ['google.vertex.chat', semconv.GEN_AI_PROVIDER_NAME_VALUE_GCP_VERTEX_AI],
    ['amazon-bedrock', semconv.GEN_AI_PROVIDER_NAME_VALUE_AWS_BEDROCK],
    ['mistral.chat', semconv.GEN_AI_PROVIDER_NAME_VALUE_MISTRAL_AI],
    ['groq.chat', semconv.GEN_AI_PROVIDER_NAME_VALUE_GROQ],
    ['deepseek.chat', semconv.GEN_AI_PROVIDER_NAME_VALUE_DEEPSEEK],
    ['xai.chat', semconv.GEN_AI_PROVIDER_NAME_VALUE_X_AI],
    ['cohere.chat', semconv.GEN_AI_PROVIDER_NAME_VALUE_COHERE],
    ['azure.chat', semconv.GEN_AI_PROVIDER_NAME_VALUE_AZURE_AI_OPENAI],
    ['perplexity', semconv.GEN_AI_PROVIDER_NAME_VALUE_PERPLEXITY],
  ])('names %s as OpenTelemetry does (%s)', (provider, expected) => {
    expect(genAiProviderName(provider)).toBe(expected);
  });

  it("keeps the first segment of a provider it does not know (an OpenAI-compatible server's own name)", () => {
    expect(genAiProviderName('ollama.chat')).toBe('ollama');
    expect(genAiProviderName('toString')).toBe('toString');
  });
});

describe('serverOf', () => {
  it('reads address and port, the scheme default when the URL has none', () => {
    expect(serverOf('https://api.anthropic.com/v1')).toEqual({ address: 'api.anthropic.com', port: 443 });
    expect(serverOf('http://127.0.0.1:11434/v1')).toEqual({ address: '127.0.0.1', port: 11434 });
    expect(serverOf('http://[::1]:8080/v1')).toEqual({ address: '::1', port: 8080 });
    expect(serverOf('not a url')).toBeNull();
    expect(serverOf('file:///tmp/x')).toBeNull();
  });

  it("reads a provider's base URL from its configuration, and gives up quietly on anything else", () => {
    expect(serverOfModel({ config: { baseURL: 'https://api.anthropic.com/v1' } })).toEqual({
      address: 'api.anthropic.com',
      port: 443,
    });
    expect(
      serverOfModel({
        modelId: 'm',
        config: { url: ({ path }: { path: string }) => `http://localhost:8000/v1${path}` },
      }),
    ).toEqual({
      address: 'localhost',
      port: 8000,
    });
    expect(serverOfModel({})).toBeNull();
    expect(
      serverOfModel({
        config: {
          url: () => {
            throw new Error('no');
          },
        },
      }),
    ).toBeNull();
  });
});
