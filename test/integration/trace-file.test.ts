/**
 * The trace as a file: every event a real run emits validates against the schema, the JSON lines
 * file holds exactly the in-memory trace, the run (usage, steps, stop reason) and every model
 * request (prompt snapshots) rebuild from the file alone, and bad trace options fail early.
 */
import { chmodSync, mkdtempSync, readFileSync, rmSync, writeFileSync, appendFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import {
  LoopConfigError,
  parseTraceText,
  rebuildPrompts,
  rebuildRun,
  traceEventSchema,
  TraceFileError,
  TRACE_SCHEMA_VERSION,
  type TraceEvent,
} from 'loopstate';
import { readTraceFile } from 'loopstate/node';
import { reply, scriptedModel } from 'loopstate/testing';
import { createTestLoop } from './helpers.js';
import { scenarioModel, TRACE_SCENARIOS } from './trace-scenarios.js';

const directory = mkdtempSync(join(tmpdir(), 'loopstate-trace-'));
afterAll(() => rmSync(directory, { recursive: true, force: true }));

/** What JSON keeps of a value: the file holds exactly this. */
const asJson = <Value>(value: Value): Value => JSON.parse(JSON.stringify(value)) as Value;

/**
 * Not made by these in-memory scenarios: a streaming model's live events reach onEvent only (never the file;
 * openai-loop.test.ts covers them), and a durable run's resume, approval and review events (test/durable covers them,
 * review.test.ts the review-requested of a run without a store too).
 */
const NOT_IN_SCENARIOS = new Set([
  'model-delta',
  'model-tool-call-start',
  'run-resume',
  'approval-decided',
  'review-requested',
  'review-decided',
]);
const ALL_TYPES = traceEventSchema.options
  .map((option) => option.shape.type.value)
  .filter((type) => !NOT_IN_SCENARIOS.has(type))
  .sort();
const seenTypes = new Set<string>();

describe.each(TRACE_SCENARIOS)('trace of a run: $name', (scenario) => {
  it('validates event by event, is the file line by line, and rebuilds the run and its requests', async () => {
    const file = join(directory, `${scenario.name.replace(/\W+/g, '-')}.jsonl`);
    const sunk: TraceEvent[] = [];
    const model = scenarioModel(scenario);
    const { loop } = createTestLoop({
      ...scenario.config,
      model,
      trace: { file, prompts: true, onEvent: (event) => sunk.push(event) },
    });
    const result = await loop.run({ goal: 'Look the records up' });

    for (const event of result.trace) {
      seenTypes.add(event.type);
      const parsed = traceEventSchema.safeParse(asJson(event));
      expect(parsed.error?.issues, `${event.type} event`).toBeUndefined();
      expect(parsed.data).toEqual(asJson(event));
    }
    expect(result.trace[0]).toMatchObject({
      type: 'run-start',
      schemaVersion: TRACE_SCHEMA_VERSION,
      modelId: model.id,
      promptVersion: expect.stringMatching(/^[0-9a-f]{16}$/) as unknown,
    });
    expect(sunk).toEqual(result.trace);

    const read = readTraceFile(file);
    expect(read.truncatedLine).toBeNull();
    expect(read.events).toEqual(asJson(result.trace));

    // The run, from the file alone.
    const rebuilt = rebuildRun(read.events);
    expect(rebuilt).toMatchObject({
      runId: result.runId,
      steps: result.steps,
      stopReason: result.stopReason,
      status: result.status,
      reportedUsage: result.usage,
    });
    const { inputTokens, outputTokens, costUsd, toolCalls } = result.usage;
    expect(rebuilt.usage).toMatchObject({ inputTokens, outputTokens, toolCalls });
    expect(rebuilt.usage.costUsd).toBeCloseTo(costUsd, 12);
    expect(rebuilt.usage.modelCalls).toBe(result.usage.modelCalls);

    // Every request the model saw, rebuilt from the prompt snapshots, without history written twice.
    const prompts = rebuildPrompts(read.events);
    expect(prompts.map((prompt) => prompt.messages)).toEqual(asJson(model.calls.map((request) => request.messages)));
    expect(prompts.map((prompt) => prompt.tools)).toEqual(
      model.calls.map((request) => request.tools.map((tool) => tool.name)),
    );
    const snapshots = read.events.filter((event) => event.type === 'prompt');
    const written = snapshots.reduce((sum, event) => sum + event.added.length, 0);
    const trimmed = read.events.some(
      (event) => event.type === 'context-trimmed' && event.messagesDropped + event.resultsDropped > 0,
    );
    // Without trimming each message is written once; a trim rewrites from the first message it replaced on.
    if (!trimmed) expect(written).toBe(model.calls.at(-1)?.messages.length);
    else expect(written).toBeLessThan(prompts.reduce((sum, prompt) => sum + prompt.messages.length, 0));
  });
});

describe('the scenarios together', () => {
  it('emit every event type of the schema', () => {
    expect([...seenTypes].sort()).toEqual(ALL_TYPES);
  });
});

describe('reading a trace file', () => {
  const runStart = { type: 'warning', runId: 'r', at: 1, message: 'hello' };

  it('names the line and the field of a bad line', () => {
    const text = `${JSON.stringify(runStart)}\n${JSON.stringify({ ...runStart, at: 'soon' })}\n`;
    expect(() => parseTraceText(text)).toThrow(TraceFileError);
    expect(() => parseTraceText(text)).toThrow(/^trace line 2, field at: /);
    expect(() => parseTraceText(`${JSON.stringify(runStart)}\n{"type":\n${JSON.stringify(runStart)}\n`)).toThrow(
      /^trace line 2: not JSON/,
    );
    expect(() => parseTraceText(`${JSON.stringify({ ...runStart, type: 'unknown' })}\n`)).toThrow(
      /^trace line 1, field type: /,
    );
  });

  it('reports an unfinished last line instead of failing on it', () => {
    const read = parseTraceText(`${JSON.stringify(runStart)}\n${JSON.stringify(runStart)}\n{"type":"warn`);
    expect(read.events).toHaveLength(2);
    expect(read.truncatedLine).toEqual({ line: 3, text: '{"type":"warn' });
  });
});

describe('trace.file options', () => {
  const model = scriptedModel([reply('ok')]);
  const configIssues = (trace: unknown) => {
    try {
      createTestLoop({ model, trace: trace as never });
    } catch (error) {
      if (error instanceof LoopConfigError) return error.issues;
      throw error;
    }
    return [];
  };

  it('refuses a file that is not a path, or a path that cannot be written, naming trace.file', () => {
    expect(configIssues({ file: 42 })).toEqual([
      { path: 'trace.file', message: 'expected a file path as a string, got number' },
    ]);
    expect(configIssues({ file: '' })).toEqual([{ path: 'trace.file', message: 'expected a non-empty file path' }]);
    expect(configIssues({ file: join(directory, 'missing', 'run.jsonl') })).toEqual([
      {
        path: 'trace.file',
        message: expect.stringMatching(/^cannot write the trace there: directory .*missing does not exist$/) as unknown,
      },
    ]);
    expect(configIssues({ file: directory })).toEqual([
      { path: 'trace.file', message: expect.stringMatching(/is a directory; expected a file path$/) as unknown },
    ]);
    expect(configIssues({ otel: { tracer: 1 } })).toEqual([
      { path: 'trace.otel.tracer', message: 'expected an OpenTelemetry Tracer (e.g. trace.getTracer(name))' },
    ]);
  });

  it.skipIf(process.getuid?.() === 0)('refuses a read-only file', () => {
    const readOnly = join(directory, 'read-only.jsonl');
    writeFileSync(readOnly, '');
    chmodSync(readOnly, 0o444);
    expect(configIssues({ file: readOnly })).toEqual([
      { path: 'trace.file', message: expect.stringMatching(/is not writable$/) as unknown },
    ]);
  });

  it('warns and runs on when the file cannot be opened at run time', async () => {
    const gone = mkdtempSync(join(tmpdir(), 'loopstate-gone-'));
    const { loop } = createTestLoop({ model: scriptedModel([reply('ok')]), trace: { file: join(gone, 'run.jsonl') } });
    rmSync(gone, { recursive: true });
    const result = await loop.run({ goal: 'hi' });
    expect(result.stopReason).toBe('completed');
    expect(result.warnings).toContainEqual(
      expect.stringMatching(/^trace\.file could not be opened, so this run is not written to it: ENOENT/),
    );
    expect(result.trace.at(-1)?.type).toBe('run-end');
  });

  it('appends several runs to one file, each line naming its run', async () => {
    const file = join(directory, 'shared.jsonl');
    const { loop } = createTestLoop({
      model: scriptedModel([reply('one'), reply('two')]),
      trace: { file },
      generateRunId: undefined,
    });
    const first = await loop.run({ goal: 'first' });
    const second = await loop.run({ goal: 'second' });
    appendFileSync(file, '');
    const { events } = readTraceFile(file);
    expect(rebuildRun(events, first.runId).stopReason).toBe('completed');
    expect(rebuildRun(events, second.runId).steps).toBe(1);
    expect(readFileSync(file, 'utf8').split('\n').filter(Boolean)).toHaveLength(
      first.trace.length + second.trace.length,
    );
  });
});
