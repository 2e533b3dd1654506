/**
 * `aiSdkModel` on the shapes of both specifications: `MockLanguageModelV3` of `ai/test` for V3, a hand-written
 * model object for V2. What the provider is called with (prompt, tools, response format, settings, signal),
 * what comes back (text, tool calls, usage of either shape, metadata), streaming and errors. Bad input is in
 * ai-sdk-model-input.test.ts.
 */
import {
  APICallError,
  LoadAPIKeyError,
  type LanguageModelV3GenerateResult,
  type LanguageModelV3StreamPart,
} from '@ai-sdk/provider';
import type { LanguageModelV2 as ProviderTwoLanguageModel } from 'ai-sdk-provider-v2';
import { MockLanguageModelV3, simulateReadableStream } from 'ai/test';
import { describe, expect, it } from 'vitest';
import { LoopConfigError, ModelCallError } from '../../contracts/errors.js';
import type { Message, ModelProgress, ModelRequest } from '../../contracts/model.js';
import { aiSdkModel, type AiSdkLanguageModel } from './ai-sdk-model.js';

const V3_USAGE = {
  inputTokens: { total: 1_200, noCache: 200, cacheRead: 1_000, cacheWrite: 0 },
  outputTokens: { total: 90, text: 60, reasoning: 30 },
};

function v3Result(overrides: Partial<LanguageModelV3GenerateResult> = {}): LanguageModelV3GenerateResult {
  return {
    content: [
      { type: 'text', text: 'Checking ' },
      { type: 'text', text: 'O-1.' },
      { type: 'reasoning', text: 'private thoughts' },
      { type: 'tool-call', toolCallId: 'call_1', toolName: 'get_order', input: '{"order_id":"O-1"}' },
      { type: 'tool-call', toolCallId: 'call_2', toolName: 'web_search', input: '{}', providerExecuted: true },
    ],
    finishReason: { unified: 'tool-calls', raw: 'tool_use' },
    usage: V3_USAGE,
    response: { id: 'resp_1', modelId: 'mock-model-2026-01-01', timestamp: new Date(0) },
    warnings: [],
    ...overrides,
  };
}

const TRANSCRIPT: Message[] = [
  { role: 'system', content: 'Be brief.' },
  { role: 'user', content: 'Status of O-1 and O-2?' },
  {
    role: 'assistant',
    content: 'Looking.',
    toolCalls: [
      { id: 'call_a', name: 'get_order', arguments: '{"order_id":"O-1"}' },
      { id: 'call_b', name: 'get_invoice', arguments: '{"order_id":' },
    ],
  },
  { role: 'tool', toolCallId: 'call_a', content: '{"status":"shipped"}' },
  { role: 'tool', toolCallId: 'call_b', content: 'invalid arguments: expected JSON' },
  { role: 'assistant', content: null, toolCalls: [{ id: 'call_c', name: 'get_order', arguments: '' }] },
  { role: 'tool', toolCallId: 'call_c', content: '{"status":"pending"}' },
];

const TOOLS = [
  {
    name: 'get_order',
    description: 'Look one order up.',
    parameters: { type: 'object', properties: { order_id: { type: 'string' } }, required: ['order_id'] },
  },
];

const request = (overrides: Partial<ModelRequest> = {}): ModelRequest => ({
  messages: TRANSCRIPT,
  tools: TOOLS,
  signal: new AbortController().signal,
  ...overrides,
});

describe('aiSdkModel on a LanguageModelV3', () => {
  it('is named provider:modelId, with the OpenTelemetry provider name', () => {
    const model = aiSdkModel(new MockLanguageModelV3({ provider: 'anthropic.messages', modelId: 'claude-sonnet-4-5' }));
    expect(model.id).toBe('anthropic.messages:claude-sonnet-4-5');
    expect(model.provider).toBe('anthropic');
    // A mock keeps no provider configuration: no server to report.
    expect(model.server).toBeUndefined();
    const overridden = aiSdkModel(new MockLanguageModelV3(), {
      provider: 'azure.ai.inference',
      server: { address: 'models.example.com', port: 443 },
    });
    expect([overridden.provider, overridden.server]).toEqual([
      'azure.ai.inference',
      { address: 'models.example.com', port: 443 },
    ]);
  });

  it('sends the transcript as the provider prompt, tool results with their tool name', async () => {
    const mock = new MockLanguageModelV3({ doGenerate: v3Result() });
    await aiSdkModel(mock).generate(request());
    const [options] = mock.doGenerateCalls;
    expect(options?.prompt).toEqual([
      { role: 'system', content: 'Be brief.' },
      { role: 'user', content: [{ type: 'text', text: 'Status of O-1 and O-2?' }] },
      {
        role: 'assistant',
        content: [
          { type: 'text', text: 'Looking.' },
          { type: 'tool-call', toolCallId: 'call_a', toolName: 'get_order', input: { order_id: 'O-1' } },
          // Malformed arguments go back as an empty object: providers insist on one; the tool's answer says what was wrong.
          { type: 'tool-call', toolCallId: 'call_b', toolName: 'get_invoice', input: {} },
        ],
      },
      {
        role: 'tool',
        content: [
          {
            type: 'tool-result',
            toolCallId: 'call_a',
            toolName: 'get_order',
            output: { type: 'text', value: '{"status":"shipped"}' },
          },
          {
            type: 'tool-result',
            toolCallId: 'call_b',
            toolName: 'get_invoice',
            output: { type: 'text', value: 'invalid arguments: expected JSON' },
          },
        ],
      },
      { role: 'assistant', content: [{ type: 'tool-call', toolCallId: 'call_c', toolName: 'get_order', input: {} }] },
      {
        role: 'tool',
        content: [
          {
            type: 'tool-result',
            toolCallId: 'call_c',
            toolName: 'get_order',
            output: { type: 'text', value: '{"status":"pending"}' },
          },
        ],
      },
    ]);
  });

  it('offers the tools as function tools with their JSON Schema, and asks for the answer schema as JSON', async () => {
    const mock = new MockLanguageModelV3({ doGenerate: v3Result() });
    const schema = { type: 'object', properties: { status: { type: 'string' } }, required: ['status'] };
    await aiSdkModel(mock).generate(request({ responseFormat: { type: 'json_schema', name: 'answer', schema } }));
    const [options] = mock.doGenerateCalls;
    expect(options?.tools).toEqual([
      { type: 'function', name: 'get_order', description: 'Look one order up.', inputSchema: TOOLS[0]!.parameters },
    ]);
    expect(options?.toolChoice).toEqual({ type: 'auto' });
    expect(options?.responseFormat).toEqual({ type: 'json', schema, name: 'answer' });

    const plain = new MockLanguageModelV3({ doGenerate: v3Result() });
    await aiSdkModel(plain, { structuredOutput: false }).generate(
      request({ tools: [], responseFormat: { type: 'json_schema', name: 'answer', schema } }),
    );
    expect(plain.doGenerateCalls[0]).not.toHaveProperty('responseFormat');
    expect(plain.doGenerateCalls[0]).not.toHaveProperty('tools');
  });

  it("maps every setting to its call option, the request's over the adapter's, and passes the signal on", async () => {
    const mock = new MockLanguageModelV3({ doGenerate: v3Result() });
    const controller = new AbortController();
    await aiSdkModel(mock, {
      settings: { temperature: 0.2, topP: 0.9, maxOutputTokens: 500, seed: 7, reasoningEffort: 'high' },
      providerOptions: { anthropic: { thinking: { type: 'enabled', budgetTokens: 1024 } } },
      headers: { 'x-team': 'support' },
    }).generate(
      request({
        signal: controller.signal,
        settings: { temperature: 0, stopSequences: ['END'], presencePenalty: 0.5, frequencyPenalty: -0.5 },
      }),
    );
    const [options] = mock.doGenerateCalls;
    expect(options).toMatchObject({
      temperature: 0,
      topP: 0.9,
      maxOutputTokens: 500,
      seed: 7,
      stopSequences: ['END'],
      presencePenalty: 0.5,
      frequencyPenalty: -0.5,
      providerOptions: { anthropic: { thinking: { type: 'enabled', budgetTokens: 1024 } } },
      headers: { 'x-team': 'support' },
    });
    expect(options?.abortSignal).toBe(controller.signal);
    // No portable option exists for it: it is never sent under a made-up name.
    expect(JSON.stringify(options)).not.toContain('high');
  });

  it('returns text, tool calls with string arguments, V3 usage with cache reads and reasoning, and metadata', async () => {
    const response = await aiSdkModel(new MockLanguageModelV3({ doGenerate: v3Result() })).generate(request());
    expect(response).toEqual({
      text: 'Checking O-1.',
      // The provider ran web_search itself: not a call for the loop.
      toolCalls: [{ id: 'call_1', name: 'get_order', arguments: '{"order_id":"O-1"}' }],
      usage: { inputTokens: 1_200, outputTokens: 90, cachedInputTokens: 1_000, reasoningTokens: 30 },
      metadata: {
        id: 'resp_1',
        model: 'mock-model-2026-01-01',
        finishReason: 'tool_calls',
        rawFinishReason: 'tool_use',
      },
    });
  });

  it('reports a reply cut by the output limit as finish reason length', async () => {
    const model = aiSdkModel(
      new MockLanguageModelV3({
        doGenerate: v3Result({
          content: [{ type: 'text', text: 'The ans' }],
          finishReason: { unified: 'length', raw: 'max_tokens' },
        }),
      }),
    );
    const response = await model.generate(request());
    expect(response.text).toBe('The ans');
    expect(response.metadata).toMatchObject({ finishReason: 'length', rawFinishReason: 'max_tokens' });
  });

  it('turns a content-filtered reply into a fatal refused error that carries the usage', async () => {
    const model = aiSdkModel(
      new MockLanguageModelV3({
        doGenerate: v3Result({ content: [], finishReason: { unified: 'content-filter', raw: 'refusal' } }),
      }),
    );
    const error = await model.generate(request()).catch((thrown: unknown) => thrown);
    expect(error).toBeInstanceOf(ModelCallError);
    expect(error).toMatchObject({
      kind: 'refused',
      code: 'model_refused',
      usage: { inputTokens: 1_200, outputTokens: 90 },
    });
    expect((error as Error).message).toContain('content filter');
  });

  it('estimates the usage when the provider reports no token counts', async () => {
    const model = aiSdkModel(
      new MockLanguageModelV3({
        doGenerate: v3Result({
          usage: {
            inputTokens: { total: undefined, noCache: undefined, cacheRead: undefined, cacheWrite: undefined },
            outputTokens: { total: undefined, text: undefined, reasoning: undefined },
          },
        }),
      }),
    );
    const { usage } = await model.generate(request());
    expect(usage.inputTokens).toBeGreaterThan(50);
    expect(usage.outputTokens).toBeGreaterThan(0);
  });

  it('rethrows an abort of the request signal as its reason, as every loopstate adapter does', async () => {
    const controller = new AbortController();
    const reason = new ModelCallError({
      kind: 'timeout',
      message: 'the model call took longer than modelCallTimeoutMs (10 ms)',
    });
    const mock = new MockLanguageModelV3({
      doGenerate: ({ abortSignal }) =>
        new Promise((_, reject) => {
          abortSignal?.addEventListener('abort', () =>
            reject(new DOMException('This operation was aborted', 'AbortError')),
          );
          controller.abort(reason);
        }),
    });
    await expect(aiSdkModel(mock).generate(request({ signal: controller.signal }))).rejects.toBe(reason);
    await expect(aiSdkModel(mock).generate(request({ signal: controller.signal }))).rejects.toBe(reason);
  });
});

describe('aiSdkModel errors', () => {
  const failing = (error: unknown) => aiSdkModel(new MockLanguageModelV3({ doGenerate: () => Promise.reject(error) }));
  const apiError = (statusCode: number | undefined, headers: Record<string, string> = {}, isRetryable?: boolean) =>
    new APICallError({
      message: 'provider said no',
      url: 'https://api.example.com/v1/messages',
      requestBodyValues: {},
      ...(statusCode === undefined ? {} : { statusCode }),
      responseHeaders: headers,
      ...(isRetryable === undefined ? {} : { isRetryable }),
    });

  it.each([
    [429, 'rate_limited'],
    [408, 'timeout'],
    [409, 'server'],
    [500, 'server'],
    [503, 'server'],
    [529, 'server'],
    [400, 'bad_request'],
    [404, 'bad_request'],
    [422, 'bad_request'],
    [401, 'auth'],
    [403, 'auth'],
  ] as const)('an APICallError with status %i is a ModelCallError of kind %s', async (status, kind) => {
    const error = await failing(apiError(status))
      .generate(request())
      .catch((thrown: unknown) => thrown);
    expect(error).toBeInstanceOf(ModelCallError);
    expect(error).toMatchObject({ kind, status });
  });

  it('reads retry-after-ms first, then retry-after in seconds', async () => {
    await expect(
      failing(apiError(429, { 'retry-after-ms': '1500', 'retry-after': '9' })).generate(request()),
    ).rejects.toMatchObject({
      retryAfterMs: 1_500,
    });
    await expect(failing(apiError(503, { 'retry-after': '2' })).generate(request())).rejects.toMatchObject({
      retryAfterMs: 2_000,
    });
    await expect(failing(apiError(400, { 'retry-after': '2' })).generate(request())).rejects.toMatchObject({
      retryAfterMs: undefined,
    });
  });

  it("lets the provider's isRetryable overrule the status, and calls a failure without a status a connection failure", async () => {
    await expect(failing(apiError(500, {}, false)).generate(request())).rejects.toMatchObject({ kind: 'bad_request' });
    await expect(failing(apiError(400, {}, true)).generate(request())).rejects.toMatchObject({ kind: 'server' });
    await expect(failing(apiError(undefined, {}, true)).generate(request())).rejects.toMatchObject({
      kind: 'connection',
    });
  });

  it('recognises an AI SDK error by its name when the marker symbol is lost (another copy, a serialised error)', async () => {
    const copied = Object.assign(new Error('Too many requests'), {
      name: 'AI_APICallError',
      statusCode: 429,
      isRetryable: true,
      responseHeaders: { 'Retry-After': '3' },
    });
    await expect(failing(copied).generate(request())).rejects.toMatchObject({
      kind: 'rate_limited',
      retryAfterMs: 3_000,
    });
  });

  it('turns a missing API key into a configuration error naming the environment variable', async () => {
    const missing = new LoadAPIKeyError({
      message:
        "Anthropic API key is missing. Pass it using the 'apiKey' parameter or the ANTHROPIC_API_KEY environment variable.",
    });
    const error = await failing(missing)
      .generate(request())
      .catch((thrown: unknown) => thrown);
    expect(error).toBeInstanceOf(LoopConfigError);
    expect(error).toMatchObject({ code: 'invalid_config' });
    expect((error as Error).message).toContain('ANTHROPIC_API_KEY');
  });

  it('calls a network failure a connection failure, anything else unknown (fatal)', async () => {
    await expect(failing(new TypeError('fetch failed')).generate(request())).rejects.toMatchObject({
      kind: 'connection',
    });
    // Providers wrap fetch failures in APICallError: a bare TypeError is a bug in the provider, never retried.
    await expect(
      failing(new TypeError("Cannot read properties of undefined (reading 'x')")).generate(request()),
    ).rejects.toMatchObject({
      kind: 'unknown',
    });
    await expect(failing(new Error('something odd')).generate(request())).rejects.toMatchObject({ kind: 'unknown' });
  });
});

function streamOf(parts: LanguageModelV3StreamPart[]) {
  return { stream: simulateReadableStream({ chunks: parts, initialDelayInMs: null, chunkDelayInMs: null }) };
}

const STREAM_PARTS: LanguageModelV3StreamPart[] = [
  { type: 'stream-start', warnings: [] },
  { type: 'response-metadata', id: 'resp_1', modelId: 'mock-model-2026-01-01', timestamp: new Date(0) },
  { type: 'text-start', id: 't1' },
  { type: 'text-delta', id: 't1', delta: 'Checking ' },
  { type: 'text-delta', id: 't1', delta: 'O-1.' },
  { type: 'text-end', id: 't1' },
  { type: 'reasoning-start', id: 'r1' },
  { type: 'reasoning-delta', id: 'r1', delta: 'private thoughts' },
  { type: 'reasoning-end', id: 'r1' },
  { type: 'tool-input-start', id: 'call_1', toolName: 'get_order' },
  { type: 'tool-input-delta', id: 'call_1', delta: '{"order_id":' },
  { type: 'tool-input-delta', id: 'call_1', delta: '"O-1"}' },
  { type: 'tool-input-end', id: 'call_1' },
  { type: 'tool-call', toolCallId: 'call_1', toolName: 'get_order', input: '{"order_id":"O-1"}' },
  { type: 'tool-call', toolCallId: 'call_2', toolName: 'web_search', input: '{}', providerExecuted: true },
  { type: 'finish', finishReason: { unified: 'tool-calls', raw: 'tool_use' }, usage: V3_USAGE },
];

describe('aiSdkModel streaming', () => {
  it('reports text deltas and tool-call starts as progress, and ends as the unstreamed reply does', async () => {
    const progress: ModelProgress[] = [];
    const mock = new MockLanguageModelV3({ doStream: streamOf(STREAM_PARTS) });
    const streamed = await aiSdkModel(mock, { stream: true }).generate(
      request({ onProgress: (event) => progress.push(event) }),
    );
    const unstreamed = await aiSdkModel(new MockLanguageModelV3({ doGenerate: v3Result() })).generate(request());
    expect(streamed).toEqual(unstreamed);
    expect(progress).toEqual([
      { type: 'text_delta', text: 'Checking ' },
      { type: 'text_delta', text: 'O-1.' },
      { type: 'tool_call_started', callId: 'call_1', name: 'get_order' },
    ]);
    expect(mock.doStreamCalls).toHaveLength(1);
  });

  it('survives a throwing progress callback', async () => {
    const model = aiSdkModel(new MockLanguageModelV3({ doStream: streamOf(STREAM_PARTS) }), { stream: true });
    const response = await model.generate(
      request({
        onProgress: () => {
          throw new Error('observer bug');
        },
      }),
    );
    expect(response.text).toBe('Checking O-1.');
  });

  it('fails a stream that reports an error part: transient, as a server giving up mid-reply is', async () => {
    const model = aiSdkModel(
      new MockLanguageModelV3({
        doStream: streamOf([
          ...STREAM_PARTS.slice(0, 4),
          { type: 'error', error: { type: 'overloaded_error', message: 'Overloaded' } },
        ]),
      }),
      { stream: true },
    );
    const error = await model.generate(request()).catch((thrown: unknown) => thrown);
    expect(error).toMatchObject({ kind: 'server' });
    expect((error as Error).message).toContain('overloaded_error');
    expect((error as Error).message).toContain('Overloaded');
  });

  it('fails a stream that ends before its finish part, as a retryable connection failure', async () => {
    const model = aiSdkModel(new MockLanguageModelV3({ doStream: streamOf(STREAM_PARTS.slice(0, -1)) }), {
      stream: true,
    });
    await expect(model.generate(request())).rejects.toMatchObject({
      kind: 'connection',
      message: expect.stringContaining('before it was complete'),
    });
  });

  it('carries the usage of a finish part when an error part follows it', async () => {
    const model = aiSdkModel(
      new MockLanguageModelV3({
        doStream: streamOf([...STREAM_PARTS, { type: 'error', error: new Error('late failure') }]),
      }),
      { stream: true },
    );
    await expect(model.generate(request())).rejects.toMatchObject({ usage: { inputTokens: 1_200, outputTokens: 90 } });
  });
});

/** A V2 model as AI SDK 5's providers make them: flat usage, finish reason as a string. */
function v2Model(
  provider: string,
  usage: Record<string, number | undefined>,
): ProviderTwoLanguageModel & { calls: unknown[] } {
  const calls: unknown[] = [];
  return {
    specificationVersion: 'v2',
    provider,
    modelId: 'model-v2',
    supportedUrls: {},
    calls,
    doGenerate: async (options) => {
      calls.push(options);
      return {
        content: [
          { type: 'text', text: 'done' },
          { type: 'tool-call', toolCallId: 'c1', toolName: 'get_order', input: '{"order_id":"O-2"}' },
        ],
        finishReason: 'tool-calls',
        usage: { inputTokens: undefined, outputTokens: undefined, totalTokens: undefined, ...usage },
        response: { id: 'v2-resp', modelId: 'model-v2-latest' },
        warnings: [],
      };
    },
    doStream: async (options) => {
      calls.push(options);
      return {
        stream: simulateReadableStream({
          initialDelayInMs: null,
          chunkDelayInMs: null,
          chunks: [
            { type: 'response-metadata', id: 'v2-resp', modelId: 'model-v2-latest' },
            { type: 'text-start', id: 't' },
            { type: 'text-delta', id: 't', delta: 'do' },
            { type: 'text-delta', id: 't', delta: 'ne' },
            { type: 'text-end', id: 't' },
            { type: 'tool-call', toolCallId: 'c1', toolName: 'get_order', input: '{"order_id":"O-2"}' },
            {
              type: 'finish',
              finishReason: 'tool-calls',
              usage: { inputTokens: undefined, outputTokens: undefined, totalTokens: undefined, ...usage },
            },
          ],
        }),
      };
    },
  };
}

describe('aiSdkModel on a LanguageModelV2', () => {
  it('takes a provider-2 model (AI SDK 5) as it is typed, and sends the same prompt', async () => {
    const model = v2Model('openai.chat', {
      inputTokens: 1_000,
      outputTokens: 50,
      cachedInputTokens: 800,
      reasoningTokens: 20,
    });
    const typed: AiSdkLanguageModel = model;
    await aiSdkModel(typed).generate(request());
    expect((model.calls[0] as { prompt: unknown }).prompt).toEqual(
      await (async () => {
        const mock = new MockLanguageModelV3({ doGenerate: v3Result() });
        await aiSdkModel(mock).generate(request());
        return mock.doGenerateCalls[0]!.prompt;
      })(),
    );
  });

  it('reads the flat V2 usage (inputTokens includes the cache reads, as OpenAI counts them) and the string finish reason', async () => {
    const response = await aiSdkModel(
      v2Model('openai.chat', { inputTokens: 1_000, outputTokens: 50, cachedInputTokens: 800, reasoningTokens: 20 }),
    ).generate(request());
    expect(response).toEqual({
      text: 'done',
      toolCalls: [{ id: 'c1', name: 'get_order', arguments: '{"order_id":"O-2"}' }],
      usage: { inputTokens: 1_000, outputTokens: 50, cachedInputTokens: 800, reasoningTokens: 20 },
      metadata: { id: 'v2-resp', model: 'model-v2-latest', finishReason: 'tool_calls' },
    });
  });

  it("adds Anthropic's cache reads to its input tokens (its V2 inputTokens leaves them out)", async () => {
    const response = await aiSdkModel(
      v2Model('anthropic.messages', { inputTokens: 200, outputTokens: 50, cachedInputTokens: 800 }),
    ).generate(request());
    expect(response.usage).toEqual({ inputTokens: 1_000, outputTokens: 50, cachedInputTokens: 800 });
  });

  it('streams a V2 model to the same reply', async () => {
    const usage = { inputTokens: 1_000, outputTokens: 50, cachedInputTokens: 800 };
    const streamed = await aiSdkModel(v2Model('openai.chat', usage), { stream: true }).generate(request());
    const unstreamed = await aiSdkModel(v2Model('openai.chat', usage)).generate(request());
    expect(streamed).toEqual(unstreamed);
  });
});

describe('aiSdkModel on a model that breaks its specification', () => {
  it('fails, never retried, on a result without content or a stream result without a stream', async () => {
    const empty = new MockLanguageModelV3({
      doGenerate: () => Promise.resolve(null as never),
      doStream: () => Promise.resolve({} as never),
    });
    await expect(aiSdkModel(empty).generate(request())).rejects.toMatchObject({
      kind: 'unknown',
      message: 'mock-provider:mock-model-id returned from doGenerate without its content',
    });
    await expect(aiSdkModel(empty, { stream: true }).generate(request())).rejects.toMatchObject({
      kind: 'unknown',
      message: 'mock-provider:mock-model-id returned from doStream without a stream',
    });
  });
});
