import { setFlagsFromString } from 'node:v8';
import { runInNewContext } from 'node:vm';
import { describe, expect, it } from 'vitest';
import { createRedactor } from '../redaction/redact.js';
import { KeptEvents, resultTraceView, RunTrace, withTrace, type EarlierTrace } from './run-trace.js';
import type { TraceEvent } from './trace-event.js';

const event = (at: number): TraceEvent => ({ type: 'run-resume', runId: 'r', at, fromSeq: 0, replayedEvents: 0 });

function trace(): RunTrace {
  return new RunTrace(
    { inMemory: true, onEvent: undefined, file: undefined, prompts: false, otel: false },
    createRedactor(),
    true,
    { sinkDropped: () => undefined, closeFailed: () => undefined },
    { agentName: 'a', modelId: 'm' },
  );
}

/** Earlier events that count how often they are read. */
function earlier(events: TraceEvent[]): EarlierTrace & { loads: number; firsts: number } {
  const source = {
    loads: 0,
    firsts: 0,
    length: events.length,
    load: () => {
      source.loads += 1;
      return [...events];
    },
    first: () => {
      source.firsts += 1;
      return events[0];
    },
  };
  return source;
}

describe('RunTrace with a resumed run’s earlier events', () => {
  it('counts them, answers the first and the newer events without reading them, and reads them once when wanted', () => {
    const run = trace();
    const before = earlier([event(1), event(2), event(3)]);
    run.restore(before, true);
    run.record(event(4));
    run.record(event(5));
    expect(run.length).toBe(5);
    expect(run.first).toEqual(event(1));
    expect(run.since(3)).toEqual([event(4), event(5)]);
    expect(run.since(5)).toEqual([]);
    expect(before.loads).toBe(0);
    // Reaching into them reads them.
    expect(run.since(2)).toEqual([event(3), event(4), event(5)]);
    expect(before.loads).toBe(1);
    expect(run.events).toEqual([1, 2, 3, 4, 5].map(event));
    expect(before.loads).toBe(1);
  });

  it('a result holds them behind `trace` until it is read, then as a plain array; the view never reads them', () => {
    const run = trace();
    const before = earlier([event(1), event(2)]);
    run.restore(before, true);
    run.record(event(3));
    const records = run.eventsForResult();
    expect(records).toBeInstanceOf(KeptEvents);
    const result = withTrace(records, { runId: 'r', trace: [] as TraceEvent[] });
    const view = resultTraceView(result);
    expect(view.length).toBe(3);
    expect(view.since(2)).toEqual([event(3)]);
    expect(before.loads).toBe(0);
    expect(Object.keys(result)).toEqual(['runId', 'trace']);
    expect(JSON.parse(JSON.stringify(result))).toEqual({ runId: 'r', trace: [1, 2, 3].map(event) });
    expect(before.loads).toBe(1);
    expect(result.trace).toBe(result.trace);
    expect(Object.getOwnPropertyDescriptor(result, 'trace')).toMatchObject({ writable: true, enumerable: true });
    // An event recorded after the result was built (a learning note) still reaches it.
    run.record(event(4));
    expect(result.trace.map(({ at }) => at)).toEqual([1, 2, 3, 4]);
  });

  it('a damaged earlier trace is refused where it is read, each time, and the property can still be set', () => {
    const run = trace();
    run.restore(
      {
        length: 2,
        load: () => {
          throw new Error('corrupt');
        },
        first: () => undefined,
      },
      true,
    );
    const result = withTrace(run.eventsForResult(), { trace: [] as TraceEvent[] });
    expect(() => result.trace).toThrow('corrupt');
    expect(() => result.trace).toThrow('corrupt');
    result.trace = [event(9)];
    expect(result.trace).toEqual([event(9)]);
  });

  it('a result frozen before its trace is read still reads it, the same array every time', () => {
    const run = trace();
    const before = earlier([event(1)]);
    run.restore(before, true);
    const result = Object.freeze(withTrace(run.eventsForResult(), { trace: [] as TraceEvent[] }));
    expect(result.trace).toEqual([event(1)]);
    expect(result.trace).toBe(result.trace);
    expect(before.loads).toBe(1);
  });

  it('a result whose earlier events are unread keeps neither the run’s trace nor its listener (the session) alive', async () => {
    setFlagsFromString('--expose-gc');
    const gc = runInNewContext('gc') as () => void;
    const before = earlier([event(1), event(2)]);
    let result: { trace: TraceEvent[] } | null = null;
    const listenerRef = (() => {
      // The listener stands for the session: its closures capture it.
      const listener = { sinkDropped: () => undefined, closeFailed: () => undefined };
      const run = new RunTrace(
        { inMemory: true, onEvent: undefined, file: undefined, prompts: false, otel: false },
        createRedactor(),
        true,
        listener,
        { agentName: 'a', modelId: 'm' },
      );
      run.restore(before, true);
      run.record(event(3));
      result = withTrace(run.eventsForResult(), { trace: [] as TraceEvent[] });
      return new WeakRef(listener);
    })();
    for (let round = 0; round < 3 && listenerRef.deref() !== undefined; round++) {
      await new Promise((resolve) => setTimeout(resolve, 0));
      gc();
    }
    expect(listenerRef.deref()).toBeUndefined();
    expect(before.loads).toBe(0);
    expect(result!.trace.map(({ at }) => at)).toEqual([1, 2, 3]);
  });

  it('without earlier events a result holds the array itself', () => {
    const run = trace();
    run.restore(earlier([]), true);
    run.record(event(1));
    const records = run.eventsForResult();
    expect(Array.isArray(records)).toBe(true);
    const result = withTrace(records, { trace: [] as TraceEvent[] });
    expect(Object.getOwnPropertyDescriptor(result, 'trace')?.value).toBe(records);
    expect(resultTraceView(result).length).toBe(1);
  });
});
