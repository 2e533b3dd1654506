import { describe, expect, it } from 'vitest';
import { DEFAULT_REDACTOR } from '../redaction/redact.js';
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
