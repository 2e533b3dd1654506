/**
 * What `openaiModel` says about itself and its replies, over real HTTP in both APIs, streamed and not:
 * the provider and server it reports, the response id, the model that answered and the finish reason
 * in the contract's vocabulary (the server's own word kept when it differs).
 */
import { describe, expect, it } from 'vitest';
import { z } from 'zod';
import { createLoop, defineTool } from 'loopstate';
import { openaiModel } from 'loopstate/openai';
import { virtualClock } from 'loopstate/testing';
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

describe('a streamed reply cut at the output limit mid tool call', () => {
  it('warns once, sends the truncated call back for argument repair, and the run completes', async () => {
    const chunk = (delta: Record<string, unknown>, finish: string | null = null) => ({
      id: 'chatcmpl-cut',
      object: 'chat.completion.chunk',
      created: 1,
      model: 'gpt-4.1-mini-2025-04-14',
      choices: [{ index: 0, delta, finish_reason: finish }],
    });
    server.enqueue(
      {
        kind: 'sse',
        events: [
          chunk({ role: 'assistant', content: '' }),
          chunk({
            tool_calls: [{ index: 0, id: 'call_1', type: 'function', function: { name: 'get_order', arguments: '' } }],
          }),
          chunk({ tool_calls: [{ index: 0, function: { arguments: '{"order_id": "O-' } }] }),
          // The output limit ends the reply inside the arguments' string.
          chunk({}, 'length'),
        ],
      },
      replyStep('chat', true, { toolCalls: [{ id: 'call_2', name: 'get_order', args: { order_id: 'O-1' } }] }),
      replyStep('chat', true, { text: 'O-1 has shipped.' }),
    );
    const looked: string[] = [];
    const loop = createLoop({
      model: openaiModel({
        model: 'gpt-4.1-mini',
        baseURL: server.baseURL,
        stream: true,
        settings: { maxOutputTokens: 16 },
      }),
      tools: [
        defineTool({
          name: 'get_order',
          description: 'Look one order up.',
          input: z.object({ order_id: z.string() }),
          access: 'read',
          execute: ({ order_id }) => {
            looked.push(order_id);
            return { order_id, status: 'shipped' };
          },
        }),
      ],
      clock: virtualClock(),
    });
    const result = await loop.run({ goal: 'Where is O-1?' });
    expect(result.stopReason).toBe('completed');
    expect(result.warnings).toEqual([
      'model call 1 (task main) was cut at the output limit (finish reason length; maxOutputTokens 16): the reply may be incomplete',
    ]);
    expect(
      result.trace.filter((event) => event.type === 'retry').map((event) => event.type === 'retry' && event.layer),
    ).toEqual(['argument_repair']);
    // The cut call never ran; the repaired one ran once; the model was told what was wrong with the cut one.
    expect(looked).toEqual(['O-1']);
    const repairRequest = server.requests[1]?.body as { messages: { role: string; tool_call_id?: string }[] };
    expect(repairRequest.messages.some((message) => message.role === 'tool' && message.tool_call_id === 'call_1')).toBe(
      true,
    );
  });
});
