/**
 * Full tool loops over HTTP through `createLoop(...).run(...)`, in both APIs, streamed and not: what
 * the server receives each step, what the run ends with, cost from the usage against the price table,
 * and the live progress events of a stream.
 */
import { describe, expect, it } from 'vitest';
import { z } from 'zod';
import { createOrderLoop } from '../../examples/order-status.js';
import { createLoop, defineTool, evaluators, type RunResult, type TraceEvent } from 'loopstate';
import { openaiModel } from 'loopstate/openai';
import { virtualClock } from 'loopstate/testing';
import { traceEventSchema } from '../../src/contracts/trace-schema.js';
import { chatChunks, replyStep } from '../support/openai-fixtures.js';
import { useOpenAIServer, type OpenAITestServer } from '../support/openai-server.js';

let server: OpenAITestServer;
useOpenAIServer((started) => (server = started));

const orders: Record<string, string> = { 'O-1': 'shipped', 'O-2': 'pending' };
const getOrder = defineTool({
  name: 'get_order',
  description: 'Look one order up.',
  input: z.object({ order_id: z.string() }),
  access: 'read',
  execute: ({ order_id }) => ({ order_id, status: orders[order_id] ?? 'unknown' }),
});
const Answer = z.object({
  statuses: z.array(z.object({ order_id: z.string(), status: z.string() })),
  note: z.string().optional(),
});
const ANSWER = '{"statuses":[{"order_id":"O-1","status":"shipped"},{"order_id":"O-2","status":"pending"}]}';

const configurations = [
  ['chat', false],
  ['chat', true],
  ['responses', false],
  ['responses', true],
] as const;

async function orderRun(api: 'chat' | 'responses', stream: boolean, events: TraceEvent[] = []): Promise<RunResult> {
  server.enqueue(
    // Two parallel calls in one reply, then one more on its own, then the answer.
    replyStep(api, stream, {
      toolCalls: [
        { id: 'call_a', name: 'get_order', args: { order_id: 'O-1' } },
        { id: 'call_b', name: 'get_order', args: { order_id: 'O-2' } },
      ],
      usage: { input: 1_000, output: 40, cached: 0 },
    }),
    replyStep(api, stream, {
      text: 'Checking once more.',
      toolCalls: [{ id: 'call_c', name: 'get_order', args: { order_id: 'O-9' } }],
      usage: { input: 1_200, output: 30, cached: 800 },
    }),
    replyStep(api, stream, { text: ANSWER, usage: { input: 1_400, output: 60, cached: 1_024, reasoning: 16 } }),
  );
  const loop = createLoop({
    model: openaiModel({
      model: 'gpt-4.1-mini',
      baseURL: server.baseURL,
      apiKey: 'sk-test-loop',
      api,
      stream,
      settings: { temperature: 0, seed: 7 },
    }),
    instructions: 'Look orders up, then answer in JSON.',
    tools: [getOrder],
    evaluate: evaluators.schema(Answer),
    limits: { maxSteps: 5, maxCostUsd: 0.5 },
    clock: virtualClock(),
    generateRunId: () => 'run-http',
    trace: { onEvent: (event) => events.push(event) },
  });
  return loop.run({ goal: 'Status of O-1 and O-2?' });
}

describe.each(configurations)('a multi-step tool loop over HTTP (api %s, stream %s)', (api, stream) => {
  it('completes with the parsed answer, one HTTP request per model call', async () => {
    const result = await orderRun(api, stream);
    expect(result.stopReason).toBe('completed');
    expect(result.output).toEqual({
      statuses: [
        { order_id: 'O-1', status: 'shipped' },
        { order_id: 'O-2', status: 'pending' },
      ],
    });
    expect(result.usage).toMatchObject({ inputTokens: 3_600, outputTokens: 130, modelCalls: 3, toolCalls: 3 });
    expect(server.requests).toHaveLength(3);
    expect(
      server.requests.every(
        (request) =>
          request.method === 'POST' && request.path === (api === 'chat' ? '/v1/chat/completions' : '/v1/responses'),
      ),
    ).toBe(true);
  });

  it('prices usage from the table, cached input at the cached rate', async () => {
    const result = await orderRun(api, stream);
    // gpt-4.1-mini: $0.40 input, $0.10 cached input, $1.60 output per million.
    const expected =
      (1_000 * 0.4 +
        40 * 1.6 +
        ((1_200 - 800) * 0.4 + 800 * 0.1 + 30 * 1.6) +
        ((1_400 - 1_024) * 0.4 + 1_024 * 0.1 + 60 * 1.6)) /
      1e6;
    expect(result.usage.costUsd).toBeCloseTo(expected, 12);
    const steps = result.trace.filter((event) => event.type === 'step-end');
    expect(steps.at(-1)).toMatchObject({
      inputTokens: 1_400,
      outputTokens: 60,
      cachedInputTokens: 1_024,
      reasoningTokens: 16,
    });
    expect(result.warnings).toEqual([]);
  });

  it('sends the tool results back with their call ids, and the settings and answer schema every time', async () => {
    await orderRun(api, stream);
    const [first, , third] = server.requests.map((request) => request.body ?? {});
    expect(first).toMatchObject({ model: 'gpt-4.1-mini', temperature: 0 });
    if (api === 'chat') {
      expect(first).toMatchObject({ seed: 7, tools: [{ type: 'function', function: { name: 'get_order' } }] });
      expect(first?.response_format).toMatchObject({
        type: 'json_schema',
        json_schema: { name: 'schema', strict: true },
      });
      expect(third?.messages).toEqual(
        expect.arrayContaining([
          expect.objectContaining({
            role: 'assistant',
            tool_calls: [expect.objectContaining({ id: 'call_a' }), expect.objectContaining({ id: 'call_b' })],
          }),
          expect.objectContaining({
            role: 'tool',
            tool_call_id: 'call_b',
            content: '{"order_id":"O-2","status":"pending"}',
          }),
          expect.objectContaining({ role: 'tool', tool_call_id: 'call_c' }),
        ]),
      );
      if (stream) expect(first).toMatchObject({ stream: true, stream_options: { include_usage: true } });
    } else {
      expect(first).toMatchObject({ store: false, tools: [{ type: 'function', name: 'get_order' }] });
      expect(first?.text).toMatchObject({ format: { type: 'json_schema', name: 'schema', strict: true } });
      expect(third?.input).toEqual(
        expect.arrayContaining([
          { type: 'function_call', call_id: 'call_a', name: 'get_order', arguments: '{"order_id":"O-1"}' },
          { type: 'function_call_output', call_id: 'call_b', output: '{"order_id":"O-2","status":"pending"}' },
        ]),
      );
      if (stream) expect(first).toMatchObject({ stream: true });
    }
  });
});

describe('streaming progress', () => {
  it.each(['chat', 'responses'] as const)(
    'reaches trace.onEvent as model-delta and model-tool-call-start, never result.trace (%s)',
    async (api) => {
      const events: TraceEvent[] = [];
      const result = await orderRun(api, true, events);
      const live = events.filter((event) => event.type === 'model-delta' || event.type === 'model-tool-call-start');
      expect(
        live
          .filter((event) => event.type === 'model-tool-call-start')
          .map((event) => [event.step, event.name, event.callId]),
      ).toEqual([
        [1, 'get_order', 'call_a'],
        [1, 'get_order', 'call_b'],
        [2, 'get_order', 'call_c'],
      ]);
      const text = (step: number) =>
        live.flatMap((event) => (event.type === 'model-delta' && event.step === step ? [event.text] : [])).join('');
      expect(text(3)).toBe(ANSWER);
      expect(text(2)).toBe('Checking once more.');
      expect(result.trace.some((event) => event.type === 'model-delta' || event.type === 'model-tool-call-start')).toBe(
        false,
      );
      for (const event of live) expect(traceEventSchema.safeParse(event).success).toBe(true);
    },
  );

  it.each(['chat', 'responses'] as const)('ends exactly as the same replies unstreamed (%s)', async (api) => {
    const streamed = await orderRun(api, true);
    const whole = await orderRun(api, false);
    const comparable = (result: RunResult) => ({
      output: result.output,
      messages: result.messages,
      usage: result.usage,
      steps: result.trace.filter((event) => event.type === 'step-end'),
    });
    expect(comparable(streamed)).toEqual(comparable(whole));
  });
});

describe('streamed tool-call deltas without index', () => {
  it('are accumulated by id: the loop runs both calls', async () => {
    server.enqueue(
      {
        kind: 'sse',
        events: chatChunks(
          {
            toolCalls: [
              { id: 'call_a', name: 'get_order', args: { order_id: 'O-1' } },
              { id: 'call_b', name: 'get_order', args: { order_id: 'O-2' } },
            ],
          },
          { withoutIndex: true },
        ),
      },
      replyStep('chat', true, { text: ANSWER }),
    );
    const loop = createLoop({
      model: openaiModel({ model: 'gpt-4.1-mini', baseURL: server.baseURL, apiKey: 'sk-test-loop', stream: true }),
      tools: [getOrder],
      evaluate: evaluators.schema(Answer),
      clock: virtualClock(),
    });
    const result = await loop.run({ goal: 'Status of O-1 and O-2?' });
    expect(result.stopReason).toBe('completed');
    expect(result.usage.toolCalls).toBe(2);
    expect(result.trace.filter((event) => event.type === 'tool-end').map((event) => event.callId)).toEqual([
      'call_a',
      'call_b',
    ]);
  });
});

describe('settings', () => {
  it("a request's own settings win over the adapter's; undefined ones are not sent", async () => {
    server.enqueue(replyStep('chat', false, { text: 'hi' }), replyStep('responses', false, { text: 'hi' }));
    const request = {
      messages: [{ role: 'user' as const, content: 'hi' }],
      tools: [],
      signal: new AbortController().signal,
    };
    const chat = openaiModel({
      model: 'gpt-4.1-mini',
      baseURL: server.baseURL,
      apiKey: 'sk-test-loop',
      settings: { temperature: 0, seed: 1, topP: undefined },
    });
    await chat.generate({ ...request, settings: { temperature: 1, maxOutputTokens: 50, reasoningEffort: 'low' } });
    expect(server.requests[0]?.body).toMatchObject({
      temperature: 1,
      seed: 1,
      max_tokens: 50,
      reasoning_effort: 'low',
    });
    expect(server.requests[0]?.body).not.toHaveProperty('top_p');
    const responses = openaiModel({
      model: 'gpt-4.1-mini',
      baseURL: server.baseURL,
      apiKey: 'sk-test-loop',
      api: 'responses',
      settings: { maxOutputTokens: 70 },
    });
    await responses.generate({ ...request, settings: { reasoningEffort: 'high' } });
    expect(server.requests[1]?.body).toMatchObject({
      max_output_tokens: 70,
      reasoning: { effort: 'high' },
      store: false,
    });
  });
});

describe('the order-status example on openaiModel', () => {
  it('runs over HTTP as it does offline', async () => {
    const answer = JSON.stringify({ order_id: 'O-101', status: 'shipped', answer: 'Order O-101 has shipped.' });
    server.enqueue(
      replyStep('chat', true, {
        toolCalls: [{ id: 'call_1', name: 'get_order_status', args: { order_id: 'O-101' } }],
        usage: { input: 180, output: 22 },
      }),
      replyStep('chat', true, { text: answer, usage: { input: 240, output: 31 } }),
    );
    const result = await createOrderLoop(
      openaiModel({ model: 'gpt-4.1-mini', baseURL: server.baseURL, apiKey: 'sk-test-loop', stream: true }),
    ).run({ goal: 'What is the status of order O-101?' });
    expect(result.stopReason).toBe('completed');
    expect(result.output).toEqual({ order_id: 'O-101', status: 'shipped', answer: 'Order O-101 has shipped.' });
    expect(result.usage.costUsd).toBeCloseTo((420 * 0.4 + 53 * 1.6) / 1e6, 12);
    expect(server.requests).toHaveLength(2);
  });
});

describe('headers and organization', () => {
  it('are sent on every request', async () => {
    server.enqueue(replyStep('chat', false, { text: 'hi' }));
    const model = openaiModel({
      model: 'gpt-4.1-mini',
      baseURL: server.baseURL,
      apiKey: 'sk-test-loop',
      organization: 'org-1',
      headers: { 'x-team': 'billing' },
    });
    await model.generate({
      messages: [{ role: 'user', content: 'hi' }],
      tools: [],
      signal: new AbortController().signal,
    });
    expect(server.requests[0]?.headers).toMatchObject({
      'openai-organization': 'org-1',
      'x-team': 'billing',
      authorization: 'Bearer sk-test-loop',
    });
  });
});

describe('structured output', () => {
  it('an optional field is sent required and nullable, and the null the model writes for it is taken out again', async () => {
    server.enqueue(replyStep('chat', false, { text: '{"statuses":[],"note":null}' }));
    const loop = createLoop({
      model: openaiModel({ model: 'gpt-4.1-mini', baseURL: server.baseURL, apiKey: 'sk-test-loop' }),
      evaluate: evaluators.schema(Answer),
      clock: virtualClock(),
    });
    const result = await loop.run({ goal: 'Nothing to report.' });
    expect(result.stopReason).toBe('completed');
    expect(result.output).toEqual({ statuses: [] });
    const format = (server.requests[0]?.body?.response_format as { json_schema: { schema: Record<string, unknown> } })
      .json_schema.schema;
    expect(format).toMatchObject({
      required: ['statuses', 'note'],
      additionalProperties: false,
      properties: { note: { type: ['string', 'null'] } },
    });
  });

  it('structuredOutput: false sends no response_format', async () => {
    server.enqueue(replyStep('chat', false, { text: '{"statuses":[]}' }));
    const loop = createLoop({
      model: openaiModel({
        model: 'gpt-4.1-mini',
        baseURL: server.baseURL,
        apiKey: 'sk-test-loop',
        structuredOutput: false,
      }),
      evaluate: evaluators.schema(Answer),
      clock: virtualClock(),
    });
    await loop.run({ goal: 'Nothing to report.' });
    expect(server.requests[0]?.body).not.toHaveProperty('response_format');
  });
});

describe('a local OpenAI-compatible server', () => {
  it('needs no key, is sent max_tokens, and an unpriced model only warns while maxCostUsd is left at its default', async () => {
    const before = process.env.OPENAI_API_KEY;
    delete process.env.OPENAI_API_KEY;
    try {
      server.enqueue(replyStep('chat', false, { text: 'hi' }));
      const loop = createLoop({
        model: openaiModel({ model: 'llama3.1:8b', baseURL: server.baseURL, settings: { maxOutputTokens: 64 } }),
        clock: virtualClock(),
      });
      const result = await loop.run({ goal: 'Say hi.' });
      expect(result.stopReason).toBe('completed');
      expect(result.warnings).toContain(
        'no price for model "llama3.1:8b": its cost counts as $0, so maxCostUsd cannot stop it; add it to `prices`',
      );
      expect(server.requests[0]?.body).toMatchObject({ model: 'llama3.1:8b', max_tokens: 64 });
    } finally {
      if (before !== undefined) process.env.OPENAI_API_KEY = before;
    }
  });

  it('an explicit maxCostUsd with no price for the model fails config validation', () => {
    const model = openaiModel({ model: 'llama3.1:8b', baseURL: server.baseURL });
    expect(() => createLoop({ model, limits: { maxCostUsd: 0.1 } })).toThrow(
      /limits\.maxCostUsd: the model "llama3\.1:8b" has no price/,
    );
    expect(() =>
      createLoop({
        model,
        limits: { maxCostUsd: 0.1 },
        prices: { 'llama3.1:8b': { inputPerMillion: 0, outputPerMillion: 0 } },
      }),
    ).not.toThrow();
    expect(() => createLoop({ model, limits: { maxCostUsd: Infinity } })).not.toThrow();
  });

  it('estimates the usage when the server reports none, so the token budgets still see it', async () => {
    const body = {
      id: 'x',
      object: 'chat.completion',
      choices: [{ index: 0, finish_reason: 'stop', message: { role: 'assistant', content: 'a'.repeat(40) } }],
    };
    server.enqueue({ kind: 'json', body });
    const loop = createLoop({ model: openaiModel({ model: 'local', baseURL: server.baseURL }), clock: virtualClock() });
    const result = await loop.run({ goal: 'Say a lot.' });
    expect(result.usage.outputTokens).toBe(10);
    expect(result.usage.inputTokens).toBeGreaterThan(0);
  });
});
