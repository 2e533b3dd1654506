import { describe, expect, it } from 'vitest';
import { createLoop, DEFAULT_LIMITS, evaluators, traceEventSchema, type TraceEvent } from '../../index.js';
import { reply, scriptedModel, virtualClock } from '../../testing/index.js';

describe('machine-event trace events', () => {
  it('record every event the machine took, just before its transition, the first with the machine input', async () => {
    const events: TraceEvent[] = [];
    const result = await createLoop({
      model: scriptedModel([reply('done')]),
      clock: virtualClock(),
      limits: { maxSteps: 4, maxCostUsd: Infinity },
      trace: { onEvent: (event) => events.push(event) },
    }).run({ goal: 'g' });
    const sent = events.filter((event) => event.type === 'machine-event');
    expect(sent.map((event) => event.event.type)).toEqual(['run.started', 'model.responded', 'evaluation.completed']);
    // Each comes right before the transition it caused.
    for (const event of sent)
      expect(events[events.indexOf(event) + 1]).toMatchObject({ type: 'transition', event: event.event.type });
    expect(sent[0]?.input).toEqual({
      limits: expect.objectContaining({
        maxSteps: 4,
        maxCostUsd: null,
        maxRetries: DEFAULT_LIMITS.maxRetries,
      }) as unknown,
      noProgress: {
        repeatedToolCall: 2,
        unchangedState: 3,
        sameEvaluatorReason: 2,
        duplicateObservation: 2,
        planStall: 10,
        sameParseError: 2,
      },
      tasks: [{ id: 'main', onFailure: 'stop', evaluated: false }],
    });
    expect(sent.slice(1).every((event) => event.input === undefined)).toBe(true);
    expect(sent[1]?.event).toMatchObject({
      type: 'model.responded',
      decision: { kind: 'final' },
      usage: { inputTokens: expect.any(Number) as unknown },
    });
    // The in-memory trace holds the same, in the documented format.
    expect(result.trace.filter((event) => event.type === 'machine-event')).toEqual(sent);
    for (const event of sent) expect(traceEventSchema.safeParse(JSON.parse(JSON.stringify(event))).success).toBe(true);
  });

  it('are redacted: an evaluator reason that holds a key reaches the trace as [redacted]', async () => {
    const key = 'sk-live-4eC39HqLyjWDarjtT1zdp7dc';
    const events: TraceEvent[] = [];
    await createLoop({
      model: scriptedModel([reply('a'), reply('b')]),
      clock: virtualClock(),
      limits: { maxRetries: 1 },
      evaluate: evaluators.rule(() => false, `rejected with ${key}`),
      trace: { onEvent: (event) => events.push(event) },
    }).run({ goal: 'g' });
    const verdicts = events.flatMap((event) =>
      event.type === 'machine-event' && event.event.type === 'evaluation.completed' ? [event.event] : [],
    );
    expect(verdicts).toHaveLength(2);
    expect(JSON.stringify(events)).not.toContain(key);
    expect(verdicts[0]?.reason).toContain('[redacted]');
  });
});
