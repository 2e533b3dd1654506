/**
 * What `openaiModel` says about itself and its replies, over real HTTP in both APIs, streamed and not:
 * the provider and server it reports, the response id, the model that answered and the finish reason
 * in the contract's vocabulary (the server's own word kept when it differs).
 */
import { describe, expect, it } from 'vitest';
import { openaiModel } from 'loopstate/openai';
import { replyStep } from '../support/openai-fixtures.js';
import { useOpenAIServer, type OpenAITestServer } from '../support/openai-server.js';

let server: OpenAITestServer;
useOpenAIServer((started) => (server = started));

const configurations = [
  ['chat', false],
  ['chat', true],
  ['responses', false],
  ['responses', true],
] as const;

const request = () => ({
  messages: [{ role: 'user' as const, content: 'Hi' }],
  tools: [],
  signal: new AbortController().signal,
});

describe('openaiModel provider and server', () => {
  it('reports openai and the host and port of its baseURL, with its own settings', () => {
    const model = openaiModel({ model: 'gpt-4.1-mini', baseURL: server.baseURL, settings: { temperature: 0.2 } });
    const port = Number(new URL(server.baseURL).port);
    expect(model.provider).toBe('openai');
    expect(model.server).toEqual({ address: '127.0.0.1', port });
    expect(model.settings).toEqual({ temperature: 0.2 });
  });

  it("defaults the port from the scheme, says azure.ai.openai for Azure's hosts, and takes a provider given", () => {
    const openai = openaiModel({ model: 'gpt-4.1-mini', apiKey: 'sk-test' });
    expect(openai.server).toEqual({ address: 'api.openai.com', port: 443 });
    expect(openai.settings).toBeUndefined();
    const azure = openaiModel({ model: 'gpt-4o', apiKey: 'k', baseURL: 'https://mine.openai.azure.com/openai/v1' });
    expect(azure.provider).toBe('azure.ai.openai');
    const groq = openaiModel({ model: 'llama', apiKey: 'k', baseURL: 'http://[::1]/v1', provider: 'groq' });
    expect(groq).toMatchObject({ provider: 'groq', server: { address: '::1', port: 80 } });
  });

  it('refuses an empty provider, naming the option', () => {
    expect(() => openaiModel({ model: 'm', baseURL: server.baseURL, provider: ' ' })).toThrow(
      /openaiModel\.provider: expected a provider name/,
    );
  });
});

describe('openaiModel response metadata', () => {
  for (const [api, stream] of configurations) {
    it(`${api}${stream ? ', streamed' : ''}: id, answering model and finish reason`, async () => {
      const model = openaiModel({ model: 'gpt-4.1-mini', baseURL: server.baseURL, api, stream });
      server.enqueue(
        replyStep(api, stream, { text: 'All done.', id: 'resp_abc', model: 'gpt-4.1-mini-2025-04-14' }),
        replyStep(api, stream, { text: 'Cut sho', finishReason: 'length' }),
        replyStep(api, stream, { toolCalls: [{ id: 'c1', name: 'lookup', args: { id: 'A' } }] }),
      );
      expect((await model.generate(request())).metadata).toEqual({
        id: 'resp_abc',
        model: 'gpt-4.1-mini-2025-04-14',
        finishReason: 'stop',
      });
      expect((await model.generate(request())).metadata).toMatchObject({ finishReason: 'length' });
      expect((await model.generate(request())).metadata).toMatchObject({ finishReason: 'tool_calls' });
    });
  }

  it("a finish reason outside the contract's vocabulary is `other`, the server's word kept", async () => {
    const model = openaiModel({ model: 'local', baseURL: server.baseURL });
    server.enqueue(
      replyStep('chat', false, { text: 'ok', finishReason: 'eos_token' }),
      replyStep('chat', false, { toolCalls: [{ id: 'c1', name: 'f', args: {} }], finishReason: 'function_call' }),
    );
    expect((await model.generate(request())).metadata).toMatchObject({
      finishReason: 'other',
      rawFinishReason: 'eos_token',
    });
    expect((await model.generate(request())).metadata).toMatchObject({
      finishReason: 'tool_calls',
      rawFinishReason: 'function_call',
    });
  });

  it('a server that names neither id nor model: no metadata beyond the finish reason', async () => {
    const model = openaiModel({ model: 'local', baseURL: server.baseURL });
    server.enqueue({
      kind: 'json',
      body: {
        choices: [{ index: 0, finish_reason: 'stop', message: { role: 'assistant', content: 'ok' } }],
        usage: { prompt_tokens: 1, completion_tokens: 1 },
      },
    });
    expect((await model.generate(request())).metadata).toEqual({ finishReason: 'stop' });
  });
});
