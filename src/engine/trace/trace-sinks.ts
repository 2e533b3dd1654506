/**
 * A run's trace sinks besides the in-memory trace: the JSON lines file, the `onEvent` callback and
 * OpenTelemetry. Each gets every redacted event; one that throws is dropped for the rest of the run
 * with a warning, and the run goes on.
 */
import { thrownMessage } from '../redaction/describe-thrown.js';
import type { GenAiSubject } from './otel/genai-conventions.js';
import { loadedOtelApi, otelGlobalsRegistered } from './otel/otel-api.js';
import { isOtelIdle, OtelSink } from './otel/otel-sink.js';
import type { OtelTraceOptions } from './trace-event.js';
import { TraceFileWriter } from './trace-file-writer.js';
import type { TraceEvent } from '../../contracts/trace-schema.js';

/** The trace options with their defaults applied. */
export interface ResolvedTraceOptions {
  inMemory: boolean;
  onEvent: ((event: TraceEvent) => void) | undefined;
  file: string | undefined;
  prompts: boolean;
  otel: OtelTraceOptions | false;
}

/** One place events go; `option` names it in warnings (`trace.file`, `trace.onEvent`, `trace.otel`). */
export interface TraceSink {
  readonly option: string;
  write(event: TraceEvent): void;
  close?(): void;
}

/**
 * Opens the run's sinks (`subject`: the loop and model facts spans and metrics carry, or a function that works
 * them out, called only when an OpenTelemetry sink opens); a file that cannot be opened is a problem to warn
 * about, not a failure.
 */
export function openTraceSinks(
  options: ResolvedTraceOptions,
  subject: GenAiSubject | (() => GenAiSubject),
): { sinks: TraceSink[]; problems: string[] } {
  const sinks: TraceSink[] = [];
  const problems: string[] = [];
  if (options.file !== undefined) {
    try {
      const writer = new TraceFileWriter(options.file);
      sinks.push({ option: 'trace.file', write: (event) => writer.write(event), close: () => writer.close() });
    } catch (error) {
      problems.push(`trace.file could not be opened, so this run is not written to it: ${thrownMessage(error)}`);
    }
  }
  const onEvent = options.onEvent;
  if (onEvent !== undefined) sinks.push({ option: 'trace.onEvent', write: onEvent });
  // Nothing would record: no sink, rather than a no-op span and a call per event.
  if (options.otel !== false) {
    const loaded = loadedOtelApi();
    if (loaded.api !== undefined) {
      // A tracer or MeterProvider of the user's that throws while the sink is set up is a warning, as an
      // unopenable trace.file is: the run goes on without it.
      try {
        if (!isOtelIdle(options.otel)) {
          const otel = new OtelSink(options.otel, typeof subject === 'function' ? subject() : subject);
          sinks.push({ option: 'trace.otel', write: (event) => otel.write(event), close: () => otel.close() });
        }
      } catch (error) {
        problems.push(`trace.otel could not be set up, so this run is not recorded to it: ${thrownMessage(error)}`);
      }
    } else if (
      options.otel.tracer !== undefined ||
      options.otel.meterProvider !== undefined ||
      otelGlobalsRegistered()
    ) {
      problems.push(
        `trace.otel is not recorded for this run: @opentelemetry/api could not be loaded (${loaded.failure})`,
      );
    }
  }
  return { sinks, problems };
}
