/**
 * The GenAI client metrics of a run's model calls: `gen_ai.client.token.usage` and
 * `gen_ai.client.operation.duration`. Recorded only when a MeterProvider is there to take them (the
 * one passed in, else the global one once an SDK registers it); the no-op provider gets no calls.
 */
import type { Attributes, Histogram, MeterProvider } from '@opentelemetry/api';
import { otelApi } from './otel-api.js';
import { LOOPSTATE_VERSION } from '../../../contracts/version.js';
import { ATTRIBUTES, METRICS, TOKEN_TYPES } from './genai-conventions.js';

const METER_NAME = 'loopstate';

/** The two histograms of one provider. */
export interface GenAiInstruments {
  tokenUsage: Histogram;
  operationDuration: Histogram;
}

/** Instruments made once per provider: every run of every loop shares them. */
const instrumentsByProvider = new WeakMap<MeterProvider, GenAiInstruments | null>();

/**
 * The instruments of `provider` (the global one when undefined), or null when it is the no-op provider
 * (no SDK registered): then nothing is measured at all.
 * @example
 * const instruments = genAiInstruments(options.meterProvider);
 */
export function genAiInstruments(provider: MeterProvider | undefined): GenAiInstruments | null {
  const chosen = provider ?? otelApi().metrics.getMeterProvider();
  const known = instrumentsByProvider.get(chosen);
  if (known !== undefined) return known;
  const meter = chosen.getMeter(METER_NAME, LOOPSTATE_VERSION);
  // The API's no-op provider hands out its one no-op meter: nothing would be kept.
  const instruments =
    meter === otelApi().createNoopMeter()
      ? null
      : {
          tokenUsage: meter.createHistogram(METRICS.tokenUsage.name, {
            unit: METRICS.tokenUsage.unit,
            description: METRICS.tokenUsage.description,
            advice: { explicitBucketBoundaries: [...METRICS.tokenUsage.boundaries] },
          }),
          operationDuration: meter.createHistogram(METRICS.operationDuration.name, {
            unit: METRICS.operationDuration.unit,
            description: METRICS.operationDuration.description,
            advice: { explicitBucketBoundaries: [...METRICS.operationDuration.boundaries] },
          }),
        };
  // The global provider can be registered later: only a real one is remembered for it.
  if (instruments !== null || provider !== undefined) instrumentsByProvider.set(chosen, instruments);
  return instruments;
}

/**
 * Records one answered model call: its duration and its input and output tokens.
 * @example
 * recordCall(instruments, { seconds: 1.2, inputTokens: 300, outputTokens: 20 }, attributes);
 */
export function recordCall(
  instruments: GenAiInstruments,
  call: { seconds: number; inputTokens: number; outputTokens: number },
  attributes: Attributes,
): void {
  instruments.operationDuration.record(call.seconds, attributes);
  instruments.tokenUsage.record(call.inputTokens, { ...attributes, [ATTRIBUTES.tokenType]: TOKEN_TYPES.input });
  instruments.tokenUsage.record(call.outputTokens, { ...attributes, [ATTRIBUTES.tokenType]: TOKEN_TYPES.output });
}

/**
 * Records one failed model call: its duration, with `error.type`.
 * @example
 * recordFailure(instruments, 0.4, 'rate_limited', attributes);
 */
export function recordFailure(
  instruments: GenAiInstruments,
  seconds: number,
  errorType: string,
  attributes: Attributes,
): void {
  instruments.operationDuration.record(seconds, { ...attributes, [ATTRIBUTES.errorType]: errorType });
}
