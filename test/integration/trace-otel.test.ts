/**
 * OpenTelemetry spans of a run, captured with the SDK's in-memory exporter: the run span under the
 * parent passed in, a span per step under it, `chat` and `execute_tool` spans under their step, the
 * GenAI attributes and the stop reason. And secrets: none reaches the memory trace, the file, the
 * callback or a span.
 */
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { ROOT_CONTEXT, trace, type MeterProvider, type Span, type Tracer } from '@opentelemetry/api';
import {
  BasicTracerProvider,
  InMemorySpanExporter,
  SimpleSpanProcessor,
  type ReadableSpan,
} from '@opentelemetry/sdk-trace-base';
import { afterAll, describe, expect, it, vi } from 'vitest';
import { evaluators, GEN_AI_SEMCONV_VERSION, type TraceEvent } from 'loopstate';
import { modelError, reply, scriptedModel, toolCall } from 'loopstate/testing';
import { createTestLoop, recordingTool } from './helpers.js';

const directory = mkdtempSync(join(tmpdir(), 'loopstate-otel-'));
afterAll(() => rmSync(directory, { recursive: true, force: true }));

function capture(): { tracer: Tracer; spans: () => ReadableSpan[] } {
  const exporter = new InMemorySpanExporter();
  const provider = new BasicTracerProvider({ spanProcessors: [new SimpleSpanProcessor(exporter)] });
  return { tracer: provider.getTracer('test'), spans: () => exporter.getFinishedSpans() };
}

const parentOf = (span: ReadableSpan) => span.parentSpanContext?.spanId;
const idOf = (span: ReadableSpan | Span) => span.spanContext().spanId;

describe('OpenTelemetry spans', () => {
  it('nest run > step > chat / execute_tool under the given parent, with the GenAI attributes', async () => {
    const { tracer, spans } = capture();
    const outer = tracer.startSpan('request');
    const { tool } = recordingTool({});
    const model = scriptedModel([
      toolCall(
        [
          { name: 'lookup', args: { id: 'A' } },
          { name: 'lookup', args: { id: 'B' } },
        ],
        { usage: { inputTokens: 120, outputTokens: 15 } },
      ),
      modelError({ status: 503 }),
      reply('{"done":true}', { usage: { inputTokens: 200, outputTokens: 9 } }),
    ]);
    const { loop } = createTestLoop({
      model,
      tools: [tool],
      evaluate: [evaluators.json()],
      trace: { otel: { tracer, parent: trace.setSpan(ROOT_CONTEXT, outer) } },
    });
    const result = await loop.run({ goal: 'Look A and B up' });
    outer.end();
    expect(result.stopReason).toBe('completed');

    const all = spans();
    const byName = (name: string) => all.filter((span) => span.name === name);
    const [run] = byName('invoke_agent loopstate');
    if (run === undefined) throw new Error('no run span');
    expect(parentOf(run)).toBe(idOf(outer));
    expect(run.attributes).toMatchObject({
      'gen_ai.operation.name': 'invoke_agent',
      'gen_ai.request.model': model.id,
      'loopstate.run.id': result.runId,
      'loopstate.stop_reason': 'completed',
      'loopstate.status': 'succeeded',
      'loopstate.steps': 2,
      'gen_ai.usage.input_tokens': 320,
      'gen_ai.usage.output_tokens': 24,
      'loopstate.semconv_version': GEN_AI_SEMCONV_VERSION,
    });

    const steps = byName('loopstate.step');
    expect(steps.map((span) => span.attributes['loopstate.step'])).toEqual([1, 2]);
    for (const step of steps) expect(parentOf(step)).toBe(idOf(run));
    const [first, second] = steps as [ReadableSpan, ReadableSpan];

    const chats = all.filter((span) => span.attributes['gen_ai.operation.name'] === 'chat');
    expect(
      chats.map((span) => [
        span.name,
        parentOf(span),
        span.attributes['gen_ai.usage.input_tokens'] ?? null,
        span.attributes['error.type'] ?? null,
      ]),
    ).toEqual([
      [`chat ${model.id}`, idOf(first), 120, null],
      // The 503 and its retry are both calls of step 2.
      [`chat ${model.id}`, idOf(second), null, 'server'],
      [`chat ${model.id}`, idOf(second), 200, null],
    ]);
    expect(chats[0]?.attributes).toMatchObject({ 'gen_ai.request.model': model.id, 'gen_ai.usage.output_tokens': 15 });

    const tools = byName('execute_tool lookup');
    const calls = result.trace.filter((event) => event.type === 'tool-end');
    expect(
      tools.map((span) => [
        parentOf(span),
        span.attributes['gen_ai.tool.name'],
        span.attributes['gen_ai.tool.call.id'],
        span.attributes['gen_ai.operation.name'],
      ]),
    ).toEqual(calls.map((call) => [idOf(first), 'lookup', call.callId, 'execute_tool']));
    // Retries and verdicts are events on their step.
    expect(second.events.map((event) => event.name)).toEqual(
      expect.arrayContaining(['loopstate.retry', 'loopstate.evaluation']),
    );
    // Every span ended, children inside their parents.
    for (const span of [...steps, ...chats, ...tools]) expect(span.ended).toBe(true);
  });

  it("an argument repair's retry event carries the field errors the model was sent", async () => {
    const { tracer, spans } = capture();
    const { tool } = recordingTool({});
    const model = scriptedModel([
      toolCall('lookup', { id: 42 }),
      toolCall('lookup', { id: 'A' }),
      reply('{"done":true}'),
    ]);
    const { loop } = createTestLoop({
      model,
      tools: [tool],
      evaluate: [evaluators.json()],
      trace: { otel: { tracer } },
    });
    expect((await loop.run({ goal: 'Look A up' })).stopReason).toBe('completed');
    const retries = spans()
      .flatMap((span) => span.events)
      .filter((event) => event.name === 'loopstate.retry');
    expect(retries).toHaveLength(1);
    expect(retries[0]?.attributes).toMatchObject({ 'loopstate.retry.layer': 'argument_repair' });
    expect(retries[0]?.attributes?.['loopstate.retry.argument_errors']).toEqual([
      expect.stringMatching(/^lookup: id: .*string/),
    ]);
  });

  it('costs one no-op span per run when the tracer records nothing', async () => {
    let started = 0;
    const noop = trace.getTracer('no provider');
    const counting: Tracer = {
      startSpan: (...args: Parameters<Tracer['startSpan']>) => {
        started++;
        return noop.startSpan(...args);
      },
      startActiveSpan: noop.startActiveSpan.bind(noop) as Tracer['startActiveSpan'],
    };
    const { loop } = createTestLoop({
      model: scriptedModel([toolCall('lookup', { id: 'A' }), reply('ok')]),
      tools: [recordingTool({}).tool],
      trace: { otel: { tracer: counting } },
    });
    expect((await loop.run({ goal: 'go' })).stopReason).toBe('completed');
    expect(started).toBe(1);
  });

  it('opens no sink by default while no SDK is registered: no tracer is asked for, not even a no-op one', async () => {
    const { metrics } = await import('@opentelemetry/api');
    const getTracer = vi.spyOn(trace, 'getTracer');
    const getMeterProvider = vi.spyOn(metrics, 'getMeterProvider');
    try {
      const { loop } = createTestLoop({
        model: scriptedModel([toolCall('lookup', { id: 'A' }), reply('ok')]),
        tools: [recordingTool({}).tool],
      });
      expect((await loop.run({ goal: 'go' })).stopReason).toBe('completed');
      expect(getTracer).not.toHaveBeenCalled();
      // It did look: the global meter provider is asked at each run, so one registered later is used.
      expect(getMeterProvider).toHaveBeenCalled();
    } finally {
      getTracer.mockRestore();
      getMeterProvider.mockRestore();
    }
  });

  it('uses the global loopstate tracer by default, and none with otel: false or trace: false', async () => {
    const exporter = new InMemorySpanExporter();
    trace.setGlobalTracerProvider(new BasicTracerProvider({ spanProcessors: [new SimpleSpanProcessor(exporter)] }));
    try {
      await createTestLoop({ model: scriptedModel([reply('ok')]) }).loop.run({ goal: 'go' });
      const names = exporter.getFinishedSpans().map((span) => span.name);
      expect(names).toEqual(['chat scripted', 'loopstate.step', 'invoke_agent loopstate']);
      expect(exporter.getFinishedSpans()[0]?.instrumentationScope).toMatchObject({
        name: 'loopstate',
        version: expect.stringMatching(/^\d+\.\d+\.\d+/) as unknown,
      });
      exporter.reset();
      for (const traceOption of [{ otel: false as const }, false as const]) {
        await createTestLoop({ model: scriptedModel([reply('ok')]), trace: traceOption }).loop.run({ goal: 'go' });
      }
      expect(exporter.getFinishedSpans()).toEqual([]);
    } finally {
      trace.disable();
    }
  });

  it('a tracer that throws is disabled with a warning; the run completes', async () => {
    const broken: Tracer = {
      startSpan: () => {
        throw new Error('exporter down');
      },
      startActiveSpan: (() => undefined) as unknown as Tracer['startActiveSpan'],
    };
    const { loop } = createTestLoop({ model: scriptedModel([reply('ok')]), trace: { otel: { tracer: broken } } });
    const result = await loop.run({ goal: 'go' });
    expect(result.stopReason).toBe('completed');
    expect(result.warnings).toContain('trace.otel failed and was disabled for this run: exporter down');
  });

  it('a MeterProvider that throws while the sink is set up is a warning; the run completes', async () => {
    const meterProvider = {
      getMeter: () => {
        throw new Error('meter backend down');
      },
    } as unknown as MeterProvider;
    const { loop } = createTestLoop({ model: scriptedModel([reply('ok')]), trace: { otel: { meterProvider } } });
    const result = await loop.run({ goal: 'go' });
    expect(result.stopReason).toBe('completed');
    expect(result.warnings).toContain(
      'trace.otel could not be set up, so this run is not recorded to it: meter backend down',
    );
  });
});

describe('redaction across every sink', () => {
  const SECRETS = ['sk-live-4eC39HqLyjWDarjtT1zdp7dc', 'ACME-20260101', 'hunter2-very-secret'];

  it('keeps secrets in the goal, tool arguments, tool results and model text out of memory, file, callback and spans', async () => {
    const { tracer, spans } = capture();
    const file = join(directory, 'secret.jsonl');
    const sunk: TraceEvent[] = [];
    const { tool } = recordingTool({
      respond: ({ id }) => ({ id, note: `use key ${SECRETS[0]} for ${SECRETS[1]}`, password: SECRETS[2] }),
    });
    const model = scriptedModel([
      toolCall('lookup', { id: SECRETS[1], api_key: SECRETS[0] }, { text: `calling with ${SECRETS[0]}` }),
      reply(`Done: the key was ${SECRETS[0]} and the case ${SECRETS[1]}; password=${SECRETS[2]}`),
    ]);
    const { loop } = createTestLoop({
      model,
      tools: [tool],
      instructions: `Never print ${SECRETS[1]}`,
      redact: { patterns: [/\bACME-\d{8}\b/] },
      trace: { file, prompts: true, onEvent: (event) => sunk.push(event), otel: { tracer } },
      // The tool's input schema takes any extra key.
    });
    const result = await loop.run({ goal: `Open case ${SECRETS[1]} with key ${SECRETS[0]}` });
    expect(result.stopReason).toBe('completed');
    // The model did see them: the point is that the trace does not.
    expect(JSON.stringify(model.calls)).toContain(SECRETS[0]);

    const everySink = {
      memory: JSON.stringify(result.trace),
      file: readFileSync(file, 'utf8'),
      callback: JSON.stringify(sunk),
      spans: JSON.stringify(
        spans().map((span) => ({
          name: span.name,
          attributes: span.attributes,
          events: span.events,
          status: span.status,
        })),
      ),
      warnings: JSON.stringify(result.warnings),
    };
    for (const [sink, text] of Object.entries(everySink)) {
      for (const secret of SECRETS) expect(text, `${sink} holds ${secret}`).not.toContain(secret);
    }
    expect(everySink.file).toContain('[redacted]');
    expect(
      result.trace.some((event) => event.type === 'prompt' && JSON.stringify(event.added).includes('[redacted]')),
    ).toBe(true);
    expect(spans().length).toBeGreaterThan(3);
  });
});
