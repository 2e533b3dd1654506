/**
 * OpenTelemetry as a trace sink: the run's redacted trace events become spans with the events' own
 * start and end times — a run span, a span per step, and `chat` and `execute_tool` children — and
 * each model call's GenAI client metrics. Parents are passed explicitly through contexts, so no
 * context manager is needed. With no tracer or MeterProvider given and no SDK registered, a run opens
 * no sink at all (`isOtelIdle`); a tracer given that does not record costs one no-op span per run.
 */
import type { Attributes, Context, Span, Tracer } from '@opentelemetry/api';
import { LOOPSTATE_VERSION } from '../../../contracts/version.js';
import type { OtelTraceOptions } from '../trace-event.js';
import type { TraceEvent } from '../../../contracts/trace-schema.js';
import {
  ATTRIBUTES,
  GEN_AI_SEMCONV_VERSION,
  metricAttributes,
  OPERATIONS,
  providerAttributes,
  requestAttributes,
  responseAttributes,
  spanNames,
  requestModelOf,
  type GenAiSubject,
} from './genai-conventions.js';
import { genAiInstruments, recordCall, recordFailure, type GenAiInstruments } from './otel-metrics.js';
import { otelApi } from './otel-api.js';

const TRACER_NAME = 'loopstate';

/** The global `loopstate` tracer: a no-op until an SDK registers a provider. */
function defaultTracer(): Tracer {
  return otelApi().trace.getTracer(TRACER_NAME, LOOPSTATE_VERSION);
}

type Event<Type extends TraceEvent['type']> = Extract<TraceEvent, { type: Type }>;

/**
 * True when a sink with these options would record nothing: no tracer and no MeterProvider given, and no SDK
 * registered globally (asked at each run, so one registered later is used from the next run on). A run then
 * opens no sink at all rather than one no-op span.
 * @example
 * if (!isOtelIdle(options.otel)) sinks.push(otelSink(options.otel));
 */
export function isOtelIdle(options: OtelTraceOptions): boolean {
  if (options.tracer !== undefined) return false;
  // The API's global provider is its proxy, which delegates to a registered SDK (another copy of the API: not idle).
  const { trace, ProxyTracerProvider } = otelApi();
  const provider = trace.getTracerProvider();
  if (!(provider instanceof ProxyTracerProvider)) return false;
  if (provider.getDelegateTracer(TRACER_NAME, LOOPSTATE_VERSION) !== undefined) return false;
  return genAiInstruments(options.meterProvider) === null;
}

/** One run's spans, built as its trace events arrive. */
export class OtelSink {
  private readonly tracer: Tracer;
  private readonly parent: Context;
  private run: { span: Span; context: Context } | null = null;
  private step: { number: number; span: Span; context: Context } | null = null;
  /** The tracer records nothing: no span is made after the run span. */
  private spansIdle = false;
  /** Null when no MeterProvider takes metrics. */
  private readonly instruments: GenAiInstruments | null;

  constructor(
    options: OtelTraceOptions,
    /** The loop's name and its model's id, provider, server and settings: on every span and metric. */
    private readonly subject: GenAiSubject,
  ) {
    this.tracer = options.tracer ?? defaultTracer();
    this.parent = options.parent ?? otelApi().context.active();
    this.instruments = genAiInstruments(options.meterProvider);
  }

  write(event: TraceEvent): void {
    if (this.instruments !== null) this.measure(event);
    if (this.spansIdle) return;
    switch (event.type) {
      case 'run-start':
        return this.startRun(event);
      case 'step-start':
        return this.startStep(event);
      case 'step-end':
        return this.chat(event);
      case 'model-error':
        return this.modelError(event);
      case 'tool-end':
        return this.tool(event);
      case 'evaluation-end':
        this.current()?.addEvent(
          'loopstate.evaluation',
          {
            'loopstate.evaluation.passed': event.passed,
            'loopstate.evaluation.reason': event.reason,
            'loopstate.evaluation.evaluator': event.evaluator ?? '',
          },
          event.at,
        );
        return;
      case 'retry':
        this.current()?.addEvent(
          'loopstate.retry',
          {
            'loopstate.retry.layer': event.layer,
            'loopstate.retry.counter': event.counter,
            'loopstate.retry.delay_ms': event.delayMs,
            // An argument repair's field errors (already redacted and bounded), one `tool: error` string a call.
            ...(event.argumentErrors === undefined
              ? {}
              : {
                  'loopstate.retry.argument_errors': event.argumentErrors.map(({ name, error }) => `${name}: ${error}`),
                }),
          },
          event.at,
        );
        return;
      case 'no-progress':
        this.current()?.addEvent(
          'loopstate.no_progress',
          {
            'loopstate.no_progress.signal': event.signal ?? '',
            'loopstate.no_progress.action': event.action,
            'loopstate.no_progress.detail': event.detail,
          },
          event.at,
        );
        return;
      case 'context-trimmed':
        this.current()?.addEvent(
          'loopstate.context_trimmed',
          {
            'loopstate.context.strategy': event.strategy,
            'loopstate.context.tokens_before': event.tokensBefore,
            'loopstate.context.tokens_after': event.tokensAfter,
          },
          event.at,
        );
        return;
      case 'warning':
        this.run?.span.addEvent('loopstate.warning', { 'loopstate.warning.message': event.message }, event.at);
        return;
      case 'run-end':
        return this.endRun(event);
      default:
        // Transitions and prompts stay in the trace: spans carry the calls, not every microstep.
        return;
    }
  }

  /** Ends whatever is still open (a run that ended without `run-end`, e.g. a crash of the driver). */
  close(): void {
    this.step?.span.end();
    this.step = null;
    this.run?.span.end();
    this.run = null;
  }

  private current(): Span | undefined {
    return this.step?.span ?? this.run?.span;
  }

  /** The GenAI client metrics of a model call, answered or failed. */
  private measure(event: TraceEvent): void {
    const instruments = this.instruments;
    if (instruments === null) return;
    if (event.type === 'step-end') {
      const attributes = metricAttributes(this.subject, event.metadata?.model);
      recordCall(
        instruments,
        { seconds: event.latencyMs / 1000, inputTokens: event.inputTokens, outputTokens: event.outputTokens },
        attributes,
      );
    } else if (event.type === 'model-error' && event.latencyMs !== undefined) {
      recordFailure(instruments, event.latencyMs / 1000, event.errorKind, metricAttributes(this.subject, undefined));
    }
  }

  private startRun(event: Event<'run-start'>): void {
    const span = this.tracer.startSpan(
      spanNames.run(this.subject.agentName),
      {
        kind: otelApi().SpanKind.INTERNAL,
        startTime: event.at,
        attributes: {
          [ATTRIBUTES.operationName]: OPERATIONS.agent,
          ...providerAttributes(this.subject),
          [ATTRIBUTES.agentName]: this.subject.agentName,
          [ATTRIBUTES.requestModel]: requestModelOf(this.subject, event.modelId),
          [ATTRIBUTES.conversationId]: event.runId,
          [ATTRIBUTES.runId]: event.runId,
          [ATTRIBUTES.promptVersion]: event.promptVersion,
          [ATTRIBUTES.semconvVersion]: GEN_AI_SEMCONV_VERSION,
        },
      },
      this.parent,
    );
    if (!span.isRecording()) {
      // A no-op tracer: no other span of this run is worth a call into OpenTelemetry.
      span.end();
      this.spansIdle = true;
      return;
    }
    this.run = { span, context: otelApi().trace.setSpan(this.parent, span) };
  }

  private startStep(event: Event<'step-start'>): void {
    // A retried model call belongs to the step it retries.
    if (this.step?.number === event.step || this.run === null) return;
    this.endStep(event.at);
    const span = this.tracer.startSpan(
      spanNames.step,
      {
        startTime: event.at,
        attributes: {
          [ATTRIBUTES.step]: event.step,
          [ATTRIBUTES.taskId]: event.taskId,
          [ATTRIBUTES.runId]: event.runId,
        },
      },
      this.run.context,
    );
    this.step = { number: event.step, span, context: otelApi().trace.setSpan(this.run.context, span) };
  }

  private endStep(at: number): void {
    this.step?.span.end(at);
    this.step = null;
  }

  private parentContext(): Context | null {
    return this.step?.context ?? this.run?.context ?? null;
  }

  private chat(event: Event<'step-end'>): void {
    const parent = this.parentContext();
    if (parent === null) return;
    const attributes: Attributes = {
      [ATTRIBUTES.operationName]: OPERATIONS.chat,
      ...providerAttributes(this.subject),
      ...requestAttributes(this.subject),
      [ATTRIBUTES.requestModel]: requestModelOf(this.subject, event.modelId),
      [ATTRIBUTES.conversationId]: event.runId,
      ...responseAttributes(event),
      [ATTRIBUTES.costUsd]: event.costUsd,
      [ATTRIBUTES.decision]: event.decision,
      [ATTRIBUTES.step]: event.step,
    };
    const span = this.tracer.startSpan(
      spanNames.chat(requestModelOf(this.subject, event.modelId)),
      { kind: otelApi().SpanKind.CLIENT, startTime: event.at - event.latencyMs, attributes },
      parent,
    );
    span.end(event.at);
  }

  private modelError(event: Event<'model-error'>): void {
    const parent = this.parentContext();
    if (parent === null || this.run === null) return;
    const model = this.subject.modelName ?? this.subject.modelId;
    const span = this.tracer.startSpan(
      spanNames.chat(model),
      {
        kind: otelApi().SpanKind.CLIENT,
        startTime: event.at - (event.latencyMs ?? 0),
        attributes: {
          [ATTRIBUTES.operationName]: OPERATIONS.chat,
          ...providerAttributes(this.subject),
          ...requestAttributes(this.subject),
          [ATTRIBUTES.conversationId]: event.runId,
          [ATTRIBUTES.errorType]: event.errorKind,
          // Tokens the provider billed before the call failed.
          ...(event.inputTokens === undefined ? {} : { [ATTRIBUTES.inputTokens]: event.inputTokens }),
          ...(event.outputTokens === undefined ? {} : { [ATTRIBUTES.outputTokens]: event.outputTokens }),
        },
      },
      parent,
    );
    span.setStatus({ code: otelApi().SpanStatusCode.ERROR, message: event.message });
    span.end(event.at);
  }

  private tool(event: Event<'tool-end'>): void {
    const parent = this.parentContext();
    if (parent === null) return;
    const span = this.tracer.startSpan(
      spanNames.tool(event.name),
      {
        kind: otelApi().SpanKind.INTERNAL,
        startTime: event.at - event.latencyMs,
        attributes: {
          [ATTRIBUTES.operationName]: OPERATIONS.tool,
          [ATTRIBUTES.toolName]: event.name,
          [ATTRIBUTES.toolCallId]: event.callId,
          [ATTRIBUTES.toolType]: 'function',
          [ATTRIBUTES.toolStatus]: event.status,
          [ATTRIBUTES.toolBytes]: event.bytes,
          [ATTRIBUTES.toolTruncated]: event.truncated,
          [ATTRIBUTES.observationId]: event.observationId,
        },
      },
      parent,
    );
    if (event.status !== 'ok') {
      span.setAttribute(ATTRIBUTES.errorType, event.status);
      span.setStatus({ code: otelApi().SpanStatusCode.ERROR, message: `tool ${event.name}: ${event.status}` });
    }
    span.end(event.at);
  }

  private endRun(event: Event<'run-end'>): void {
    this.endStep(event.at);
    const run = this.run;
    if (run === null) return;
    run.span.setAttributes({
      [ATTRIBUTES.stopReason]: event.stopReason,
      [ATTRIBUTES.status]: event.status,
      [ATTRIBUTES.detail]: event.detail,
      [ATTRIBUTES.steps]: event.steps,
      [ATTRIBUTES.inputTokens]: event.usage.inputTokens,
      [ATTRIBUTES.outputTokens]: event.usage.outputTokens,
      [ATTRIBUTES.costUsd]: event.usage.costUsd,
      [ATTRIBUTES.modelCalls]: event.usage.modelCalls,
      [ATTRIBUTES.toolCalls]: event.usage.toolCalls,
    });
    if (event.status === 'failed')
      run.span.setStatus({ code: otelApi().SpanStatusCode.ERROR, message: `${event.stopReason}: ${event.detail}` });
    else if (event.status === 'succeeded') run.span.setStatus({ code: otelApi().SpanStatusCode.OK });
    run.span.end(event.at);
    this.run = null;
  }
}
