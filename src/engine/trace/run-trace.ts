/**
 * One run's trace: every event redacted once, kept for `result.trace` and written to each sink (the
 * caller's `onEvent`, the JSON lines file, OpenTelemetry spans). A sink that throws is dropped with a
 * warning, never stopping the loop.
 */
import { thrownMessage } from '../redaction/describe-thrown.js';
import type { Redactor } from '../redaction/redact.js';
import { redactedEvent } from './redact-event.js';
import type { TraceEvent } from './trace-event.js';
import type { GenAiSubject } from './otel/genai-conventions.js';
import { openTraceSinks, type ResolvedTraceOptions, type TraceSink } from './trace-sinks.js';

/** The sink live events go to: the caller's `onEvent`. */
const LIVE_SINK = 'trace.onEvent';

/** What the trace tells its run about: a sink dropped (a warning with a trace event) or one that failed to close (a warning only). */
export interface RunTraceListener {
  sinkDropped(message: string, at: number): void;
  closeFailed(message: string): void;
}

/**
 * A resumed run's trace before its snapshot, still in the journal's chunks: `length` events, read and checked
 * by `load` only when the events themselves are wanted (`result.trace` read), not to rebuild the run.
 */
export interface EarlierTrace {
  readonly length: number;
  /** The events, in a fresh array; throws (a `StoreRecordError`) when the chunks are damaged. */
  load(): TraceEvent[];
  /** The first event alone (read from the first chunk only). */
  first(): TraceEvent | undefined;
}

/**
 * The events a run keeps: a resumed run's earlier ones still in the journal (read on first use), then the ones
 * in memory. Its own object, so a result whose earlier events are unread holds only this, not the run's trace
 * (whose sinks and listener hold the whole run).
 */
export class KeptEvents {
  /** The events kept in memory, after `#earlier`'s. */
  #events: TraceEvent[] = [];
  /** The events before them still in the journal (a resumed run): read on first use, then in `#events`. */
  #earlier: EarlierTrace | null = null;

  /** True while a resumed run's earlier events are still unread. */
  get unread(): boolean {
    return this.#earlier !== null;
  }

  /** The in-memory events alone (all of them once `unread` is false). */
  get inMemory(): TraceEvent[] {
    return this.#events;
  }

  /** How many events are kept (a resumed run's earlier ones counted, not read). */
  get length(): number {
    return (this.#earlier?.length ?? 0) + this.#events.length;
  }

  /** The first event kept (a resumed run's earlier trace gives its own first, reading no more of it). */
  get first(): TraceEvent | undefined {
    return this.#earlier === null ? this.#events[0] : this.#earlier.first();
  }

  /** The events from index `from` on: a resumed run's earlier ones are read only when `from` reaches into them. */
  since(from: number): TraceEvent[] {
    const earlier = this.#earlier?.length ?? 0;
    return from >= earlier ? this.#events.slice(from - earlier) : this.loaded().slice(from);
  }

  /** Every event, a resumed run's earlier ones read first (once). */
  loaded(): TraceEvent[] {
    const earlier = this.#earlier;
    if (earlier === null) return this.#events;
    const events = earlier.load();
    for (const event of this.#events) events.push(event);
    this.#events = events;
    this.#earlier = null;
    return events;
  }

  push(event: TraceEvent): void {
    this.#events.push(event);
  }

  /** Drops every event (a restore from a snapshot replaces them). */
  clear(): void {
    this.#events = [];
    this.#earlier = null;
  }

  /** The earlier events, still in the journal, of a trace that holds none yet. */
  setEarlier(earlier: EarlierTrace): void {
    this.#earlier = earlier;
  }
}

/** Results whose trace still has a resumed run's earlier events in the journal, and the events they read it from. */
const unreadTraces = new WeakMap<object, KeptEvents>();

/**
 * `result` with its `trace`: the array, or (a resumed run whose earlier events are still in the journal) a
 * property that reads them the first time it is read, then holds the array like any other. JSON.stringify,
 * a spread or `structuredClone` of the result read it too; a damaged trace chunk throws `corrupt_record` there.
 */
export function withTrace<Result extends { trace: TraceEvent[] }>(
  trace: TraceEvent[] | KeptEvents,
  result: Result,
): Result {
  if (Array.isArray(trace)) {
    result.trace = trace;
    return result;
  }
  const source = trace as KeptEvents;
  const settle = (value: TraceEvent[]) => {
    unreadTraces.delete(result);
    // A result the caller froze or sealed keeps the accessor (it then gives the same array every time).
    if (Object.getOwnPropertyDescriptor(result, 'trace')?.configurable !== true) return;
    Object.defineProperty(result, 'trace', { value, writable: true, enumerable: true, configurable: true });
  };
  unreadTraces.set(result, source);
  Object.defineProperty(result, 'trace', {
    enumerable: true,
    configurable: true,
    get: () => {
      const events = source.loaded();
      settle(events);
      return events;
    },
    set: settle,
  });
  return result;
}

/**
 * A result's trace as far as its length and its events from `from` on, without reading a resumed run's
 * earlier events from the journal when they are still there (what a durable stop stores of the trace).
 */
export function resultTraceView(result: { trace: TraceEvent[] }): {
  readonly length: number;
  since(from: number): TraceEvent[];
} {
  const unread = unreadTraces.get(result);
  if (unread !== undefined) return unread;
  const events = result.trace;
  return { length: events.length, since: (from) => events.slice(from) };
}

export class RunTrace {
  /** The events kept: `result.trace`. */
  readonly #kept = new KeptEvents();
  /** Where events go besides `result.trace`; a sink that fails is removed from this list. */
  readonly #sinks: TraceSink[];
  /** Sinks that could not be opened, said as warnings once the run has started. */
  readonly problems: readonly string[];
  /** True while a durable run is rebuilt from its journal: its events were delivered to the sinks once already. */
  #replaying = false;

  constructor(
    private readonly options: ResolvedTraceOptions,
    private readonly redact: Redactor,
    /** The run id holds nothing the redaction rules would change. */
    private readonly runIdIsClean: boolean,
    private readonly listener: RunTraceListener,
    /** Or a function that works it out, called only when an OpenTelemetry sink opens. */
    subject: GenAiSubject | (() => GenAiSubject),
  ) {
    const { sinks, problems } = openTraceSinks(options, subject);
    this.#sinks = sinks;
    this.problems = problems;
  }

  /** The events kept in memory, redacted: `result.trace`. A resumed run's earlier events are read here first. */
  get events(): readonly TraceEvent[] {
    return this.#kept.loaded();
  }

  /** The first event kept (a resumed run's earlier trace gives its own first, reading no more of it). */
  get first(): TraceEvent | undefined {
    return this.#kept.first;
  }

  /** How many events are kept (a resumed run's earlier ones counted, not read). */
  get length(): number {
    return this.#kept.length;
  }

  /** The events from index `from` on: a resumed run's earlier ones are read only when `from` reaches into them. */
  since(from: number): TraceEvent[] {
    return this.#kept.since(from);
  }

  /**
   * The events array itself, handed to the run's result (no copy: the run is over); the kept events (not this
   * trace, which holds the run through its listener) when a resumed run's earlier events are still unread (the
   * result reads them when its `trace` is read: `withTrace`).
   */
  eventsForResult(): TraceEvent[] | KeptEvents {
    return this.#kept.unread ? this.#kept : this.#kept.inMemory;
  }

  /** Every event is redacted here, the one door to `result.trace` and every sink. */
  record(unredacted: TraceEvent): void {
    this.emit(unredacted, false);
  }

  /** True when live events have somewhere to go: a streaming model's progress is then worth reporting. */
  get wantsLiveEvents(): boolean {
    return this.#sinks.some((sink) => sink.option === LIVE_SINK);
  }

  /** A live event (a streamed delta): redacted and handed to `onEvent`, never kept on `result.trace`. */
  recordLive(unredacted: TraceEvent): void {
    if (this.wantsLiveEvents) this.emit(unredacted, true);
  }

  /** `live`: a streamed delta, for `onEvent` only (never kept on `result.trace`, in the file or in spans). */
  private emit(unredacted: TraceEvent, live: boolean): void {
    const sinks = this.#sinks;
    const keep = this.options.inMemory && !live;
    if (!keep && sinks.length === 0) return;
    const event = redactedEvent(unredacted, this.redact, this.runIdIsClean);
    if (keep) this.#kept.push(event);
    // A durable run being rebuilt delivered these events to its sinks the first time.
    if (this.#replaying) return;
    for (let index = 0; index < sinks.length; index++) {
      const sink = sinks[index];
      if (sink === undefined || (live && sink.option !== LIVE_SINK)) continue;
      try {
        // A machine event's `event` is the very object the machine is about to take (it is sent after it is
        // recorded): the caller's `onEvent` gets a copy of its own, which it may change without changing the
        // run or its journal. The file and OpenTelemetry sinks only read it.
        sink.write(
          sink.option === LIVE_SINK && unredacted.type === 'machine-event' ? this.redact.strings(unredacted) : event,
        );
      } catch (error) {
        // A broken trace sink must not stop the loop; it is dropped once, with a warning.
        sinks.splice(index--, 1);
        this.closeSink(sink);
        this.listener.sinkDropped(
          `${sink.option} ${sink.option === LIVE_SINK ? 'threw' : 'failed'} and was disabled for this run: ${thrownMessage(error)}`,
          event.at,
        );
      }
    }
  }

  /** True while a durable run is rebuilt from its journal (its events already reached the sinks). */
  get replaying(): boolean {
    return this.#replaying;
  }

  /** Runs `rebuild` with the sinks muted: the events it records reached them the first time. */
  whileReplaying(rebuild: () => void): void {
    this.#replaying = true;
    try {
      rebuild();
    } finally {
      this.#replaying = false;
    }
  }

  /**
   * Puts back journalled events (`replace`: they are all of them, from a snapshot, and may still be in the
   * journal: an `EarlierTrace`, read on first use).
   */
  restore(events: readonly TraceEvent[] | EarlierTrace, replace: boolean): void {
    const kept = this.#kept;
    if (replace) kept.clear();
    if (!Array.isArray(events)) {
      const earlier = events as EarlierTrace;
      if (kept.length > 0) for (const event of earlier.load()) kept.push(event);
      else if (earlier.length > 0) kept.setEarlier(earlier);
      return;
    }
    for (const event of events) kept.push(event);
  }

  /** Closes every sink (the trace file's descriptor, open spans); safe to call twice. */
  close(): void {
    for (const sink of this.#sinks.splice(0)) this.closeSink(sink);
  }

  private closeSink(sink: TraceSink): void {
    try {
      sink.close?.();
    } catch (error) {
      this.listener.closeFailed(`${sink.option} could not be closed: ${thrownMessage(error)}`);
    }
  }
}
