/**
 * The OpenTelemetry GenAI conventions through real loop runs, read back with the real SDKs
 * (`@opentelemetry/sdk-trace-base`'s in-memory exporter, `@opentelemetry/sdk-metrics` with a reader):
 * the inference, agent and tool spans' attributes, the two client metrics with their units, buckets and
 * attributes, a failed call's `error.type`, a streamed OpenAI call over HTTP, and every attribute and
 * metric name we emit checked against `@opentelemetry/semantic-conventions`' registry.
 */
import { readFileSync } from 'node:fs';
import { metrics, type Attributes } from '@opentelemetry/api';
import { BasicTracerProvider, InMemorySpanExporter, SimpleSpanProcessor } from '@opentelemetry/sdk-trace-base';
import type { ReadableSpan } from '@opentelemetry/sdk-trace-base';
import {
  DataPointType,
  MeterProvider,
  MetricReader,
  type HistogramMetricData,
  type MetricData,
} from '@opentelemetry/sdk-metrics';
import * as registry from '@opentelemetry/semantic-conventions/incubating';
import { afterEach, describe, expect, it } from 'vitest';
import { evaluators, type LoopConfig } from 'loopstate';
import { aiSdkModel } from 'loopstate/ai-sdk';
import { openaiModel } from 'loopstate/openai';
import { MockLanguageModelV3 } from 'ai/test';
import { modelError, reply, scriptedModel, toolCall } from 'loopstate/testing';
import { GEN_AI_ATTRIBUTES, LOOPSTATE_ATTRIBUTES, METRICS } from '../../src/engine/trace/otel/genai-conventions.js';
import { replyStep, apiError } from '../support/openai-fixtures.js';
import { useOpenAIServer, type OpenAITestServer } from '../support/openai-server.js';
import { createTestLoop, recordingTool } from './helpers.js';

let server: OpenAITestServer;
useOpenAIServer((started) => (server = started));

/** A reader the test collects from when it wants: no timers. */
class CollectingReader extends MetricReader {
  protected override async onForceFlush(): Promise<void> {}
  protected override async onShutdown(): Promise<void> {}
}

interface Capture {
  otel: NonNullable<Exclude<NonNullable<LoopConfig['trace']>, false>['otel']>;
  spans: () => ReadableSpan[];
  metrics: () => Promise<MetricData[]>;
}

function capture(withMeterProvider = true): Capture & { meterProvider: MeterProvider; reader: CollectingReader } {
  const exporter = new InMemorySpanExporter();
  const tracerProvider = new BasicTracerProvider({ spanProcessors: [new SimpleSpanProcessor(exporter)] });
  const reader = new CollectingReader();
  const meterProvider = new MeterProvider({ readers: [reader] });
  return {
    otel: { tracer: tracerProvider.getTracer('test'), ...(withMeterProvider ? { meterProvider } : {}) },
    spans: () => exporter.getFinishedSpans(),
    metrics: async () => {
      const { resourceMetrics } = await reader.collect();
      return resourceMetrics.scopeMetrics.flatMap((scope) => scope.metrics);
    },
    meterProvider,
    reader,
  };
}

const histogram = (all: MetricData[], name: string): HistogramMetricData => {
  const found = all.find((metric) => metric.descriptor.name === name);
  if (found === undefined || found.dataPointType !== DataPointType.HISTOGRAM) throw new Error(`no histogram ${name}`);
  return found;
};

/** A data point's value by its attributes, without the ones every point shares. */
const pointsOf = (metric: HistogramMetricData) =>
  metric.dataPoints.map((point) => ({ attributes: point.attributes, count: point.value.count, sum: point.value.sum }));

function scriptedRun(capture: Capture) {
  const model = scriptedModel(
    [
      toolCall(
        'lookup',
        { id: 'A' },
        {
          usage: { inputTokens: 120, outputTokens: 15 },
          metadata: { id: 'resp_1', model: 'gpt-4.1-mini-2025-04-14', finishReason: 'tool_calls' },
        },
      ),
      modelError({ status: 503 }),
      reply('{"done":true}', {
        usage: { inputTokens: 200, outputTokens: 9, cachedInputTokens: 128, reasoningTokens: 4 },
        metadata: { id: 'resp_2', model: 'gpt-4.1-mini-2025-04-14', finishReason: 'stop' },
      }),
    ],
    {
      id: 'gpt-4.1-mini',
      provider: 'openai',
      server: { address: 'api.example.test', port: 8443 },
      settings: {
        temperature: 0.2,
        topP: 0.9,
        maxOutputTokens: 800,
        seed: 7,
        stopSequences: ['END'],
        presencePenalty: 0.1,
        frequencyPenalty: 0.3,
      },
    },
  );
  const { tool } = recordingTool({});
  const { loop } = createTestLoop({
    model,
    name: 'order-desk',
    tools: [tool],
    evaluate: [evaluators.json()],
    trace: { otel: capture.otel },
  });
  return loop.run({ goal: 'Look A up' });
}

afterEach(() => metrics.disable());

describe('GenAI spans', () => {
  it('inference, agent and tool spans carry the conventions’ attributes', async () => {
    const captured = capture();
    const result = await scriptedRun(captured);
    expect(result.stopReason).toBe('completed');
    const all = captured.spans();
    const run = all.find((span) => span.name === 'invoke_agent order-desk');
    expect(run?.attributes).toMatchObject({
      'gen_ai.operation.name': 'invoke_agent',
      'gen_ai.agent.name': 'order-desk',
      'gen_ai.provider.name': 'openai',
      'gen_ai.request.model': 'gpt-4.1-mini',
      'gen_ai.conversation.id': result.runId,
    });
    const chats = all.filter((span) => span.attributes['gen_ai.operation.name'] === 'chat');
    expect(chats.map((span) => span.name)).toEqual(['chat gpt-4.1-mini', 'chat gpt-4.1-mini', 'chat gpt-4.1-mini']);
    const shared = {
      'gen_ai.provider.name': 'openai',
      'gen_ai.request.model': 'gpt-4.1-mini',
      'gen_ai.request.temperature': 0.2,
      'gen_ai.request.top_p': 0.9,
      'gen_ai.request.max_tokens': 800,
      'gen_ai.request.seed': 7,
      'gen_ai.request.stop_sequences': ['END'],
      'gen_ai.request.presence_penalty': 0.1,
      'gen_ai.request.frequency_penalty': 0.3,
      'server.address': 'api.example.test',
      'server.port': 8443,
    };
    expect(chats[0]?.attributes).toMatchObject({
      ...shared,
      'gen_ai.response.id': 'resp_1',
      'gen_ai.response.model': 'gpt-4.1-mini-2025-04-14',
      'gen_ai.response.finish_reasons': ['tool_calls'],
      'gen_ai.usage.input_tokens': 120,
      'gen_ai.usage.output_tokens': 15,
    });
    expect(chats[1]?.attributes).toMatchObject({ ...shared, 'error.type': 'server' });
    expect(chats[1]?.attributes).not.toHaveProperty('gen_ai.response.id');
    expect(chats[2]?.attributes).toMatchObject({
      ...shared,
      'gen_ai.response.finish_reasons': ['stop'],
      'gen_ai.usage.cache_read.input_tokens': 128,
      'gen_ai.usage.reasoning.output_tokens': 4,
    });
    // The old loopstate.usage.* names are gone: the registry has its own.
    for (const span of chats)
      expect(Object.keys(span.attributes).filter((key) => key.startsWith('loopstate.usage'))).toEqual([]);
    const [tool] = all.filter((span) => span.name === 'execute_tool lookup');
    expect(tool?.attributes).toMatchObject({
      'gen_ai.operation.name': 'execute_tool',
      'gen_ai.tool.name': 'lookup',
      'gen_ai.tool.type': 'function',
    });
  });

  it('a model that names no provider is reported as unknown, with no server or request settings', async () => {
    const captured = capture();
    const { loop } = createTestLoop({ model: scriptedModel([reply('ok')]), trace: { otel: captured.otel } });
    await loop.run({ goal: 'go' });
    const chat = captured.spans().find((span) => span.name === 'chat scripted');
    expect(chat?.attributes['gen_ai.provider.name']).toBe('unknown');
    expect(
      Object.keys(chat?.attributes ?? {}).filter((key) => /^(server\.|gen_ai\.request\.(?!model))/.test(key)),
    ).toEqual([]);
    const run = captured.spans().find((span) => span.name === 'invoke_agent loopstate');
    expect(run?.attributes['gen_ai.agent.name']).toBe('loopstate');
  });

  it("an AI SDK model's spans and metrics name the provider's model, not loopstate's provider-prefixed id", async () => {
    const captured = capture();
    const languageModel = new MockLanguageModelV3({
      provider: 'anthropic.messages',
      modelId: 'claude-sonnet-4-5',
      doGenerate: async () => ({
        content: [{ type: 'text', text: 'ok' }],
        finishReason: { unified: 'stop', raw: 'end_turn' },
        usage: {
          inputTokens: { total: 10, noCache: 10, cacheRead: undefined, cacheWrite: undefined },
          outputTokens: { total: 2, text: 2, reasoning: undefined },
        },
        warnings: [],
      }),
    });
    const model = aiSdkModel(languageModel);
    expect(model.id).toBe('anthropic.messages:claude-sonnet-4-5');
    const { loop } = createTestLoop({
      model,
      prices: { [model.id]: { inputPerMillion: 3, outputPerMillion: 15 } },
      trace: { otel: captured.otel },
    });
    expect((await loop.run({ goal: 'go' })).stopReason).toBe('completed');
    const chat = captured.spans().find((span) => span.name.startsWith('chat '));
    expect(chat?.name).toBe('chat claude-sonnet-4-5');
    expect(chat?.attributes['gen_ai.request.model']).toBe('claude-sonnet-4-5');
    expect(chat?.attributes['gen_ai.provider.name']).toBe('anthropic');
    const tokens = histogram(await captured.metrics(), 'gen_ai.client.token.usage');
    expect(new Set(tokens.dataPoints.map((point) => point.attributes['gen_ai.request.model']))).toEqual(
      new Set(['claude-sonnet-4-5']),
    );
  });
});

describe('GenAI subject (the loop and model facts on every span)', () => {
  /** A scripted model whose `modelName` (read for spans and metrics alone) counts its reads. */
  function countingModel() {
    const reads = { modelName: 0 };
    const model = Object.defineProperty(scriptedModel([reply('ok'), reply('ok')]), 'modelName', {
      get: () => {
        reads.modelName++;
        return 'provider-model-name';
      },
    });
    return { model, reads };
  }

  it('is worked out only for a run that opens an OpenTelemetry sink', async () => {
    const { model, reads } = countingModel();
    const { loop } = createTestLoop({ model });
    expect((await loop.run({ goal: 'go' })).stopReason).toBe('completed');
    const off = createTestLoop({ model, trace: { otel: false } }).loop;
    expect((await off.run({ goal: 'go' })).stopReason).toBe('completed');
    expect(reads.modelName).toBe(0);
  });

  it('still names the model on the spans of a run that records them', async () => {
    const { model, reads } = countingModel();
    const captured = capture(false);
    const { loop } = createTestLoop({ model, trace: { otel: captured.otel } });
    expect((await loop.run({ goal: 'go' })).stopReason).toBe('completed');
    expect(reads.modelName).toBeGreaterThan(0);
    const chat = captured.spans().find((span) => span.name.startsWith('chat '));
    expect(chat?.attributes['gen_ai.request.model']).toBe('provider-model-name');
  });
});

describe('GenAI client metrics', () => {
  it('token usage and operation duration, with the advised buckets and a failure’s error.type', async () => {
    const captured = capture();
    await scriptedRun(captured);
    const all = await captured.metrics();
    const tokens = histogram(all, 'gen_ai.client.token.usage');
    expect(tokens.descriptor.unit).toBe('{token}');
    for (const point of tokens.dataPoints)
      expect(point.value.buckets.boundaries).toEqual([...METRICS.tokenUsage.boundaries]);
    const base = {
      'gen_ai.operation.name': 'chat',
      'gen_ai.provider.name': 'openai',
      'gen_ai.request.model': 'gpt-4.1-mini',
      'gen_ai.response.model': 'gpt-4.1-mini-2025-04-14',
      'server.address': 'api.example.test',
      'server.port': 8443,
    };
    expect(pointsOf(tokens)).toEqual(
      expect.arrayContaining([
        { attributes: { ...base, 'gen_ai.token.type': 'input' }, count: 2, sum: 320 },
        { attributes: { ...base, 'gen_ai.token.type': 'output' }, count: 2, sum: 24 },
      ]),
    );
    expect(tokens.dataPoints).toHaveLength(2);
    const duration = histogram(all, 'gen_ai.client.operation.duration');
    expect(duration.descriptor.unit).toBe('s');
    for (const point of duration.dataPoints)
      expect(point.value.buckets.boundaries).toEqual([...METRICS.operationDuration.boundaries]);
    const { 'gen_ai.response.model': _answered, ...unanswered } = base;
    expect(pointsOf(duration).map(({ attributes, count }) => ({ attributes, count }))).toEqual(
      expect.arrayContaining([
        { attributes: base, count: 2 },
        { attributes: { ...unanswered, 'error.type': 'server' }, count: 1 },
      ]),
    );
  });

  it('go to the global MeterProvider once one is registered, and nowhere (no calls) before', async () => {
    const unregistered = capture(false);
    await scriptedRun(unregistered);
    expect(await unregistered.metrics()).toEqual([]);
    const registered = capture(false);
    metrics.setGlobalMeterProvider(registered.meterProvider);
    await scriptedRun(registered);
    expect(histogram(await registered.metrics(), 'gen_ai.client.token.usage').dataPoints).toHaveLength(2);
  });
});

describe('a streamed OpenAI call over HTTP', () => {
  it('exports provider, server, response id and model, finish reason and usage; a 401 exports error.type auth', async () => {
    const captured = capture();
    const { loop } = createTestLoop({
      model: openaiModel({
        model: 'gpt-4.1-mini',
        baseURL: server.baseURL,
        stream: true,
        settings: { maxOutputTokens: 64 },
      }),
      trace: { otel: captured.otel },
    });
    server.enqueue(
      replyStep('chat', true, {
        text: 'Shipped.',
        id: 'chatcmpl-stream-1',
        model: 'gpt-4.1-mini-2025-04-14',
        usage: { input: 40, output: 3, cached: 32 },
      }),
    );
    expect((await loop.run({ goal: 'Where is O-1?' })).stopReason).toBe('completed');
    const port = Number(new URL(server.baseURL).port);
    const chat = captured.spans().find((span) => span.name === 'chat gpt-4.1-mini');
    expect(chat?.attributes).toMatchObject({
      'gen_ai.provider.name': 'openai',
      'server.address': '127.0.0.1',
      'server.port': port,
      'gen_ai.request.max_tokens': 64,
      'gen_ai.response.id': 'chatcmpl-stream-1',
      'gen_ai.response.model': 'gpt-4.1-mini-2025-04-14',
      'gen_ai.response.finish_reasons': ['stop'],
      'gen_ai.usage.input_tokens': 40,
      'gen_ai.usage.output_tokens': 3,
      'gen_ai.usage.cache_read.input_tokens': 32,
    });

    server.enqueue(apiError(401, 'Incorrect API key provided'));
    expect((await loop.run({ goal: 'Again' })).stopReason).toBe('fatal_error');
    const failed = captured.spans().filter((span) => span.attributes['error.type'] === 'auth');
    expect(failed).toHaveLength(1);
    expect(failed[0]?.attributes).toMatchObject({ 'gen_ai.provider.name': 'openai', 'server.port': port });
    const duration = histogram(await captured.metrics(), 'gen_ai.client.operation.duration');
    expect(duration.dataPoints.map((point) => point.attributes['error.type'] ?? null).sort()).toEqual(['auth', null]);
  });
});

/** Every exported constant value of a kind (`ATTR_`, `METRIC_`) in the registry. */
const registryValues = (prefix: string): Set<string> =>
  new Set(
    Object.entries(registry)
      .filter(([name, value]) => name.startsWith(prefix) && typeof value === 'string')
      .map(([, value]) => value as string),
  );

/** Registry names whose doc says "Replaced by": deprecated for another name, not merely moved. */
function replacedNames(): Set<string> {
  const declarations = ['experimental_attributes', 'experimental_metrics', 'stable_attributes', 'stable_metrics'].map(
    (file) =>
      readFileSync(
        new URL(`../../node_modules/@opentelemetry/semantic-conventions/dist/${file}.d.mts`, import.meta.url),
        'utf8',
      ),
  );
  const replaced = new Set<string>();
  for (const text of declarations)
    for (const [, doc, value] of text.matchAll(/\/\*\*((?:(?!\*\/)[\s\S])*)\*\/\s*declare const \w+: "([^"]+)";/g))
      if (doc !== undefined && value !== undefined && /@deprecated Replaced by/.test(doc)) replaced.add(value);
  return replaced;
}

describe('names against @opentelemetry/semantic-conventions', () => {
  it('every attribute and metric name a run emits is in the registry (and not replaced), or a documented loopstate.* one', async () => {
    const captured = capture();
    await scriptedRun(captured);
    const emitted = new Set<string>();
    const add = (attributes: Attributes | undefined) =>
      Object.keys(attributes ?? {}).forEach((key) => emitted.add(key));
    for (const span of captured.spans()) {
      add(span.attributes);
      for (const event of span.events) add(event.attributes);
    }
    const metricData = await captured.metrics();
    for (const metric of metricData) for (const point of metric.dataPoints) add(point.attributes);

    const attributes = registryValues('ATTR_');
    const replaced = replacedNames();
    const guide = readFileSync(new URL('../../docs/guides/traces-and-otel.md', import.meta.url), 'utf8');
    const problems: string[] = [];
    for (const name of emitted) {
      if (name.startsWith('loopstate.')) {
        if (!guide.includes(`\`${name}\``)) problems.push(`${name}: a loopstate attribute the guide does not list`);
      } else if (!attributes.has(name)) problems.push(`${name}: not in the registry`);
      else if (replaced.has(name)) problems.push(`${name}: deprecated in the registry (replaced)`);
    }
    const metricNames = registryValues('METRIC_');
    for (const metric of metricData)
      if (!metricNames.has(metric.descriptor.name)) problems.push(`${metric.descriptor.name}: not a registry metric`);
    expect(problems).toEqual([]);
    // The run above emits every GenAI name we define, so the check covers the whole module.
    for (const name of Object.values(GEN_AI_ATTRIBUTES)) expect(emitted.has(name), name).toBe(true);
  });

  it('the mapping module’s constants equal the registry’s values', () => {
    const byValue = registryValues('ATTR_');
    for (const [key, name] of Object.entries(GEN_AI_ATTRIBUTES))
      expect(byValue.has(name), `${key}: ${name}`).toBe(true);
    for (const name of Object.values(LOOPSTATE_ATTRIBUTES)) expect(name.startsWith('loopstate.')).toBe(true);
    expect(METRICS.tokenUsage.name).toBe(registry.METRIC_GEN_AI_CLIENT_TOKEN_USAGE);
    expect(METRICS.operationDuration.name).toBe(registry.METRIC_GEN_AI_CLIENT_OPERATION_DURATION);
    expect(GEN_AI_ATTRIBUTES.cacheReadInputTokens).toBe(registry.ATTR_GEN_AI_USAGE_CACHE_READ_INPUT_TOKENS);
    expect(GEN_AI_ATTRIBUTES.reasoningOutputTokens).toBe(registry.ATTR_GEN_AI_USAGE_REASONING_OUTPUT_TOKENS);
    expect(GEN_AI_ATTRIBUTES.providerName).toBe(registry.ATTR_GEN_AI_PROVIDER_NAME);
    expect(GEN_AI_ATTRIBUTES.responseFinishReasons).toBe(registry.ATTR_GEN_AI_RESPONSE_FINISH_REASONS);
    // The replaced-names check can fail: gen_ai.system is in the registry, replaced by gen_ai.provider.name.
    expect(replacedNames().has('gen_ai.system')).toBe(true);
  });
});
