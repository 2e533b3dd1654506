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

export class RunTrace {
  readonly #events: TraceEvent[] = [];
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
    subject: GenAiSubject,
  ) {
    const { sinks, problems } = openTraceSinks(options, subject);
    this.#sinks = sinks;
    this.problems = problems;
  }

  /** The events kept in memory, redacted: `result.trace`. */
  get events(): readonly TraceEvent[] {
    return this.#events;
  }

  /** The events array itself, handed to the run's result (no copy: the run is over). */
  eventsForResult(): TraceEvent[] {
    return this.#events;
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
    if (keep) this.#events.push(event);
    // A durable run being rebuilt delivered these events to its sinks the first time.
    if (this.#replaying) return;
    for (let index = 0; index < sinks.length; index++) {
      const sink = sinks[index];
      if (sink === undefined || (live && sink.option !== LIVE_SINK)) continue;
      try {
        sink.write(event);
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

  /** Puts back journalled events (`replace`: they are all of them, from a snapshot). */
  restore(events: readonly TraceEvent[], replace: boolean): void {
    if (replace) this.#events.length = 0;
    for (const event of events) this.#events.push(event);
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
