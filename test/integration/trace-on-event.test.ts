/**
 * `trace.onEvent` gets events of its own: a callback that changes one (a `machine-event`'s event is the
 * very object the machine is about to take) changes neither the run nor its trace.
 */
import { describe, expect, it } from 'vitest';
import type { TraceEvent } from 'loopstate';
import { reply, scriptedModel } from 'loopstate/testing';
import { createTestLoop } from './helpers.js';

describe('trace.onEvent', () => {
  it("a callback that changes a machine event's usage changes neither the machine nor result.trace", async () => {
    const model = scriptedModel([reply('done', { usage: { inputTokens: 10, outputTokens: 5 } })], { id: 'scripted' });
    const seen: TraceEvent[] = [];
    const onEvent = (event: TraceEvent) => {
      seen.push(event);
      if (event.type !== 'machine-event' || event.event.type !== 'model.responded') return;
      const usage = (event.event as { usage?: { outputTokens?: number } }).usage;
      if (usage !== undefined) usage.outputTokens = 999_999;
    };
    const { loop } = createTestLoop({ model, limits: { maxOutputTokens: 1_000 }, trace: { onEvent } });

    const result = await loop.run({ goal: 'Say done' });

    expect(result.stopReason).toBe('completed');
    expect(result.usage.outputTokens).toBe(5);
    const responded = (events: readonly TraceEvent[]) =>
      events.find((event) => event.type === 'machine-event' && event.event.type === 'model.responded');
    // The callback saw (and changed) its own copy; the trace kept the event as the machine took it.
    expect(JSON.stringify(responded(seen))).toContain('999999');
    expect(JSON.stringify(responded(result.trace))).not.toContain('999999');
  });
});
