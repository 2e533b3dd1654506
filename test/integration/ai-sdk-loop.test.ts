/**
 * One loop, unchanged, on three AI SDK models: the order-status example (`examples/order-status.ts`: a
 * malformed id repaired after its field error, the lookup, the JSON answer its evaluators check) on
 * `@ai-sdk/anthropic` and `@ai-sdk/openai-compatible` over HTTP and on `MockLanguageModelV3`, and a V2 model.
 * Every run must complete with the same answer and the same transcript. The config is the example's own,
 * with a price for each model added (its cost budget refuses a model it cannot price).
 */
import { createAnthropic } from '@ai-sdk/anthropic';
import { createOpenAICompatible } from '@ai-sdk/openai-compatible';
import type { LanguageModelV3GenerateResult } from '@ai-sdk/provider';
import type { LanguageModelV2 } from 'ai-sdk-provider-v2';
import { MockLanguageModelV3 } from 'ai/test';
import { describe, expect, it } from 'vitest';
import { goal, orderLoopConfig } from '../../examples/order-status.js';
import { createLoop, type RunResult } from 'loopstate';
import { aiSdkModel, type AiSdkLanguageModel } from 'loopstate/ai-sdk';
import { anthropicStep } from '../support/anthropic-fixtures.js';
import { replyStep } from '../support/openai-fixtures.js';
import { useOpenAIServer, type OpenAITestServer } from '../support/openai-server.js';

let server: OpenAITestServer;
useOpenAIServer((started) => (server = started));

const ANSWER = { order_id: 'O-101', status: 'shipped', answer: 'Order O-101 has shipped.' };
/** The example's offline script: a malformed id, the repaired lookup, the answer. */
const SCRIPT = [
  {
    toolCalls: [{ id: 'call_1', name: 'get_order_status', args: { order_id: '101' } }],
    usage: { input: 180, output: 22 },
  },
  {
    toolCalls: [{ id: 'call_2', name: 'get_order_status', args: { order_id: 'O-101' } }],
    usage: { input: 230, output: 22 },
  },
  { text: JSON.stringify(ANSWER), usage: { input: 290, output: 31 } },
];

const PRICE = { inputPerMillion: 3, outputPerMillion: 15 };

const v3Usage = (input: number, output: number) => ({
  inputTokens: { total: input, noCache: input, cacheRead: 0, cacheWrite: 0 },
  outputTokens: { total: output, text: output, reasoning: 0 },
});

function mockResults(): LanguageModelV3GenerateResult[] {
  return SCRIPT.map((step) => ({
    content: [
      ...(step.text === undefined ? [] : [{ type: 'text' as const, text: step.text }]),
      ...(step.toolCalls ?? []).map((call) => ({
        type: 'tool-call' as const,
        toolCallId: call.id,
        toolName: call.name,
        input: JSON.stringify(call.args),
      })),
    ],
    finishReason: { unified: step.text === undefined ? 'tool-calls' : 'stop', raw: undefined },
    usage: v3Usage(step.usage.input, step.usage.output),
    warnings: [],
  }));
}

function v2Model(): LanguageModelV2 {
  const steps = [...SCRIPT];
  return {
    specificationVersion: 'v2',
    provider: 'custom.chat',
    modelId: 'custom-model',
    supportedUrls: {},
    doGenerate: async () => {
      const step = steps.shift()!;
      return {
        content: [
          ...(step.text === undefined ? [] : [{ type: 'text' as const, text: step.text }]),
          ...(step.toolCalls ?? []).map((call) => ({
            type: 'tool-call' as const,
            toolCallId: call.id,
            toolName: call.name,
            input: JSON.stringify(call.args),
          })),
        ],
        finishReason: step.text === undefined ? 'tool-calls' : 'stop',
        usage: { inputTokens: step.usage.input, outputTokens: step.usage.output, totalTokens: undefined },
        warnings: [],
      };
    },
    doStream: () => Promise.reject(new Error('not streamed in this test')),
  };
}

const models: [string, () => AiSdkLanguageModel, boolean][] = [
  [
    'anthropic over HTTP',
    () => {
      server.enqueue(...SCRIPT.map((step) => anthropicStep(false, step)));
      return createAnthropic({ baseURL: server.baseURL, apiKey: 'sk-ant-test' })('claude-sonnet-4-5');
    },
    false,
  ],
  [
    'anthropic over HTTP, streamed',
    () => {
      server.enqueue(...SCRIPT.map((step) => anthropicStep(true, step)));
      return createAnthropic({ baseURL: server.baseURL, apiKey: 'sk-ant-test' })('claude-sonnet-4-5');
    },
    true,
  ],
  [
    'openai-compatible over HTTP',
    () => {
      server.enqueue(...SCRIPT.map((step) => replyStep('chat', false, step)));
      return createOpenAICompatible({ name: 'local', baseURL: server.baseURL, includeUsage: true })('llama3.1:8b');
    },
    false,
  ],
  [
    'openai-compatible over HTTP, streamed',
    () => {
      server.enqueue(...SCRIPT.map((step) => replyStep('chat', true, step)));
      return createOpenAICompatible({ name: 'local', baseURL: server.baseURL, includeUsage: true })('llama3.1:8b');
    },
    true,
  ],
  ['MockLanguageModelV3', () => new MockLanguageModelV3({ doGenerate: mockResults() }), false],
  ['a LanguageModelV2', v2Model, false],
];

const results = new Map<string, RunResult>();

describe.each(models)('the order-status example on %s', (name, languageModel, stream) => {
  it('completes with the checked answer after repairing the malformed id', async () => {
    const model = aiSdkModel(languageModel(), { stream });
    // The example's cost budget needs a price for the model; the built-in table knows OpenAI's only.
    const loop = createLoop({ ...orderLoopConfig(model), prices: { [model.id]: PRICE } });
    const result = await loop.run({ goal });
    results.set(name, result);
    expect(result.stopReason).toBe('completed');
    expect(result.output).toEqual(ANSWER);
    expect(result.steps).toBe(3);
    expect(result.usage.inputTokens).toBe(700);
    expect(result.usage.outputTokens).toBe(75);
    expect(result.usage.costUsd).toBeCloseTo((700 * 3 + 75 * 15) / 1e6, 12);
    const toolAnswers = result.messages.filter((message) => message.role === 'tool').map((message) => message.content);
    expect(toolAnswers[0]).toContain('expected an order id like O-100');
    expect(toolAnswers[1]).toContain('shipped');
  });
});

describe('the same loop on every model', () => {
  it('ends in the same transcript', () => {
    expect(results.size).toBe(models.length);
    const [first, ...rest] = [...results.values()].map((result) => result.messages);
    for (const messages of rest) expect(messages).toEqual(first);
  });
});
