import { describe, expect, it } from 'vitest';
import { createRedactor, DEFAULT_REDACTOR, type Redactor } from '../redaction/redact.js';
import type { TraceEvent } from './trace-event.js';
import { redactedEvent } from './redact-event.js';

const SECRET = 'sk-live-4eC39HqLyjWDarjtT1zdp7dc';

const stepEnd = (metadata: Extract<TraceEvent, { type: 'step-end' }>['metadata']): TraceEvent => ({
  type: 'step-end',
  runId: 'run',
  at: 1,
  step: 1,
  taskId: 'main',
  modelId: 'gpt-4.1-mini',
  latencyMs: 5,
  inputTokens: 1,
  outputTokens: 1,
  costUsd: 0,
  decision: 'final',
  toolCalls: [],
  replySummary: 'ok',
  ...(metadata === undefined ? {} : { metadata }),
});

describe('redactedEvent step-end metadata', () => {
  it('redacts a secret in the response id, model or raw finish reason, and keeps the rest', () => {
    const event = redactedEvent(
      stepEnd({ id: `resp ${SECRET}`, model: 'gpt-4.1-mini', finishReason: 'other', rawFinishReason: SECRET }),
      DEFAULT_REDACTOR,
      true,
    );
    expect(event.type === 'step-end' && event.metadata).toEqual({
      id: 'resp [redacted]',
      model: 'gpt-4.1-mini',
      finishReason: 'other',
      rawFinishReason: '[redacted]',
    });
  });

  it('returns a clean event as it is', () => {
    const clean = stepEnd({ id: 'resp_1', finishReason: 'stop' });
    expect(redactedEvent(clean, DEFAULT_REDACTOR, true)).toBe(clean);
  });
});

describe('redactedEvent machine-event', () => {
  const machineEvent = (parseError: string | null): TraceEvent => ({
    type: 'machine-event',
    runId: 'run',
    at: 1,
    event: {
      type: 'model.responded',
      at: 1,
      decision: { kind: 'tool_calls', calls: 1, invalidCalls: 1, parseError },
      usage: { inputTokens: 1, outputTokens: 1, costUsd: 0 },
    },
  });

  it('returns a clean machine event as it is: two a step, each copied before', () => {
    const clean = machineEvent(null);
    expect(redactedEvent(clean, DEFAULT_REDACTOR, true)).toBe(clean);
  });

  it('redacts a secret in a machine event as a full walk does, leaving the event the machine took alone', () => {
    const dirty = machineEvent(`bad arguments ${SECRET}`);
    const redacted = redactedEvent(dirty, DEFAULT_REDACTOR, true);
    expect(redacted).toEqual(DEFAULT_REDACTOR.strings(dirty));
    expect(JSON.stringify(redacted)).not.toContain(SECRET);
    expect(JSON.stringify(dirty)).toContain(SECRET);
  });
});

describe('redactedEvent: the events a run records once', () => {
  const runEvents = (secret: string): TraceEvent[] => [
    {
      type: 'run-start',
      runId: 'run',
      at: 1,
      schemaVersion: 2,
      goalSummary: `goal ${secret}`,
      tasks: ['main', `task ${secret}`],
      name: `agent ${secret}`,
      modelId: `model ${secret}`,
      provider: `provider ${secret}`,
      server: { address: `${secret}.example.com`, port: 443 },
      settings: { temperature: 0, stopSequences: ['END', secret] },
      promptVersion: 'aaaa0000bbbb1111',
      limits: {
        maxSteps: 3,
        maxStepsPerTask: 3,
        maxRetries: 2,
        deadlineMs: null,
        maxInputTokens: null,
        maxOutputTokens: null,
        maxCostUsd: 1,
        maxParallelTools: 4,
        maxToolCalls: 3,
        maxToolCallsPerReply: 8,
        maxToolResultBytes: 1000,
        maxArgumentRepairs: 2,
        modelCallTimeoutMs: 1000,
        evaluatorTimeoutMs: 1000,
      },
    },
    { type: 'warning', runId: 'run', at: 2, message: `careful ${secret}` },
    {
      type: 'evaluation-end',
      runId: 'run',
      at: 3,
      taskId: `task ${secret}`,
      step: 1,
      passed: false,
      reason: `reason ${secret}`,
      evaluator: `judge ${secret}`,
      usage: { inputTokens: 1, outputTokens: 1, costUsd: 0 },
      modelCalls: 1,
    },
    {
      type: 'run-end',
      runId: 'run',
      at: 4,
      status: 'failed',
      stopReason: 'fatal_error',
      detail: `detail ${secret}`,
      usage: { inputTokens: 1, outputTokens: 1, costUsd: 0, modelCalls: 1, toolCalls: 0 },
      steps: 1,
    },
  ];

  it('redacts every free-text field as a full walk does, key order included, with copies of what it shares', () => {
    const redactor = createRedactor({ patterns: [/tok-[a-z]+/] });
    for (const event of runEvents('tok-secret')) {
      const redacted = redactedEvent(event, redactor, true);
      const walked = redactor.strings(event);
      expect(redacted).toEqual(walked);
      expect(JSON.stringify(redacted)).toBe(JSON.stringify(walked));
      expect(JSON.stringify(redacted)).not.toContain('tok-secret');
      expect(JSON.stringify(event)).toContain('tok-secret');
      // The run's usage is `result.usage` too: the trace's must not be that very object.
      if ('usage' in event && event.usage) expect((redacted as { usage: unknown }).usage).not.toBe(event.usage);
    }
  });

  it('walks only the small parts, not the whole event (one run-start, warning, evaluation-end, run-end a run)', () => {
    let walked: unknown[] = [];
    const counting: Redactor = {
      ...DEFAULT_REDACTOR,
      strings: <Value>(value: Value) => {
        walked.push(value);
        return DEFAULT_REDACTOR.strings(value);
      },
    };
    for (const event of runEvents('x')) {
      walked = [];
      redactedEvent(event, counting, true);
      expect(walked).not.toContain(event);
    }
    // A run id the rules would change: every event is walked whole, as before.
    const [start] = runEvents('x');
    walked = [];
    redactedEvent(start!, counting, false);
    expect(walked).toEqual([start]);
  });

  it('returns a clean warning as it is', () => {
    const warning: TraceEvent = { type: 'warning', runId: 'run', at: 1, message: 'no price for model "m"' };
    expect(redactedEvent(warning, DEFAULT_REDACTOR, true)).toBe(warning);
  });
});
