/**
 * Trace events: enough to rebuild a run — inputs in summary, model, tool
 * choices with argument summaries, observation ids, state changes, tokens, cost, latency,
 * retries, verdicts and the stop reason. No private reasoning text; secrets redacted.
 */
import type { Context, MeterProvider, Tracer } from '@opentelemetry/api';
import { DEFAULT_REDACTOR, type Redactor } from '../redaction/redact.js';
import type { TraceEvent } from '../../contracts/trace-schema.js';

export type { TraceEvent, TraceEventType } from '../../contracts/trace-schema.js';

/**
 * OpenTelemetry export: a span for the run, one per step, and child spans per model call (`chat`) and
 * tool call (`execute_tool`), made from the same redacted events as the trace. Parents are passed
 * explicitly; no context manager is needed.
 * @example
 * createLoop({ model, trace: { otel: { tracer: provider.getTracer('my-service'), parent: trace.setSpan(context.active(), requestSpan) } } });
 */
export interface OtelTraceOptions {
  /** Defaults to the global tracer `loopstate`, a no-op until an OpenTelemetry SDK registers a provider. */
  tracer?: Tracer;
  /** The context the run span is a child of; defaults to the active context (the root one when no context manager is set). */
  parent?: Context;
  /**
   * Where the GenAI client metrics go (`gen_ai.client.token.usage`, `gen_ai.client.operation.duration`).
   * Defaults to the global provider (`metrics.setGlobalMeterProvider`); with none registered, no
   * metric is recorded.
   */
  meterProvider?: MeterProvider;
}

/**
 * Where trace events go: kept in memory on the result (default), appended to a JSON lines file,
 * handed to `onEvent`, and exported as OpenTelemetry spans. A sink that fails is disabled for the
 * run with a warning; the run itself never fails because of its trace.
 * @example
 * createLoop({ model, trace: { file: 'run.jsonl', prompts: true, onEvent: (event) => console.log(event.type) } });
 */
export interface TraceOptions {
  /** Keep events on `result.trace` (default true). */
  inMemory?: boolean;
  /**
   * Called synchronously with every event, already redacted; it alone also gets the live events of a
   * streaming model (`model-delta`, `model-tool-call-start`), which the `step-end` after them sums up.
   */
  onEvent?: (event: TraceEvent) => void;
  /**
   * A JSON lines file every event is appended to as it happens, one line each, written straight to the
   * file (a process that dies mid-run leaves every event before it). Several runs may share a file: each
   * line names its run.
   */
  file?: string;
  /**
   * Record what the model was sent on each call (`prompt` events), redacted: the messages new since the
   * previous call and how many of its messages are kept, so history is never written twice. Off by
   * default; `rebuildPrompts(events)` gives back each full request.
   */
  prompts?: boolean;
  /** OpenTelemetry spans (on by default through the global tracer, which costs next to nothing without an SDK); `false` turns them off. */
  otel?: OtelTraceOptions | false;
}

const SUMMARY_CHARS = 200;
/** Patterns run on the shown part plus this margin, so a secret cut at the edge is still recognised whole. */
const SECRET_MARGIN_CHARS = 1024;

/**
 * A short, redacted rendering of a value for traces: values under secret-looking keys and values that
 * look like secrets become `[redacted]` (a loop passes its own redactor, with its `redact` option).
 * @example
 * summarize({ order_id: 'O-1', api_key: 'sk-123' }) // '{"order_id":"O-1","api_key":"[redacted]"}'
 */
export function summarize(value: unknown, redactor: Redactor = DEFAULT_REDACTOR): string {
  const rendered = redactor.render(value);
  const shown = rendered.slice(0, SUMMARY_CHARS + SECRET_MARGIN_CHARS);
  const text = redactor.text(shown);
  if (text.length <= SUMMARY_CHARS)
    return shown.length === rendered.length ? text : `${text}…(${rendered.length} chars)`;
  // Never cut between the two halves of a surrogate pair.
  const cut = /[\uD800-\uDBFF]/.test(text.charAt(SUMMARY_CHARS - 1)) ? SUMMARY_CHARS - 1 : SUMMARY_CHARS;
  return `${text.slice(0, cut)}…(${rendered.length} chars)`;
}
