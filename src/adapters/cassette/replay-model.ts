/**
 * `replayModel`: a `Model` that answers from a cassette, offline. Each request is redacted and keyed
 * as at recording; the recorded calls with that key are served in the order they were recorded (a
 * retried identical request gets its second answer second). Anything else fails closed.
 */
import { LoopstateError, ModelCallError } from '../../contracts/errors.js';
import { createRedactor, type RedactOptions } from '../../engine/redaction/redact.js';
import { systemClock, type Clock } from '../../engine/runtime/clock.js';
import type { Model, ModelRequest, ModelResponse } from '../../contracts/model.js';
import { modelFacts } from '../../engine/trace/model-facts.js';
import { CassetteMismatchError } from './cassette-errors.js';
import { readCassette, requestOf, type RecordedCall, type RecordedError } from './cassette-format.js';
import { nearestRecorded } from './nearest-request.js';
import { cassetteRequest, requestKey, type PlainData } from './request-key.js';

/**
 * Options of `replayModel`.
 * @example
 * replayModel('run.json', { latency: 'recorded', clock: virtualClock() });
 */
export interface ReplayModelOptions {
  /** The extra redaction rules the cassette was recorded with (`recordModel`'s `redact`), so requests key the same. */
  redact?: RedactOptions;
  /** `instant` (default) answers at once; `recorded` waits each call's recorded latency on `clock`. */
  latency?: 'instant' | 'recorded';
  /**
   * What the loop does before retrying a replayed 429, 5xx or timeout: `skip` retries at once, its
   * backoff and Retry-After not waited (no provider is there to wait for); `wait` sleeps the backoff on
   * the loop's clock, as when recorded. Defaults to `wait` with `latency: 'recorded'` (the replay then
   * takes the recording's time throughout), else `skip`.
   */
  backoff?: 'skip' | 'wait';
  /** Where `latency: 'recorded'` waits; defaults to the wall clock. Pass the loop's clock to reproduce its timings. */
  clock?: Clock;
}

/** Misuse fails at once, naming the option, rather than replaying with a mode nobody asked for. */
function checkOptions(options: ReplayModelOptions): void {
  const allowed = { latency: ['instant', 'recorded'], backoff: ['skip', 'wait'] } as const;
  for (const [name, values] of Object.entries(allowed)) {
    const value: unknown = options[name as keyof typeof allowed];
    if (value !== undefined && !(values as readonly unknown[]).includes(value)) {
      throw new TypeError(
        `replayModel: ${name} expected ${values.map((item) => `'${item}'`).join(' or ')} or no value, got ${JSON.stringify(value) ?? String(value)}`,
      );
    }
  }
}

/**
 * A model that replays a cassette.
 * @example
 * const model: ReplayingModel = replayModel('run.json'); await loop.run({ goal }); model.assertComplete();
 */
export interface ReplayingModel extends Model {
  /** The cassette file replayed. */
  readonly path: string;
  /** Recorded calls not replayed yet. */
  readonly remaining: number;
  /** Throws `LoopstateError` (code `cassette_unused_calls`) when recorded calls were not replayed. */
  assertComplete(): void;
}

/**
 * Reads the cassette at `path` (all of it, now: a missing, corrupt, cut-short or newer-version file
 * throws `CassetteFileError` before anything runs) and returns a model that serves it: the recorded
 * model id and context window, each response as recorded (a fresh copy each time), each recorded
 * error thrown again (a `ModelCallError` keeps its kind, status and Retry-After, so retries replay
 * the same; by default the loop retries it without waiting, see `backoff`), and a call recorded as cut short by a cancel or the deadline waits for the replayed run
 * to be cut short the same way. A request that matches no recorded call rejects with `CassetteMismatchError` (code
 * `cassette_mismatch`), which ends the run with `fatal_error`: it names the call, the nearest
 * recorded request and the first field that differs.
 * @example
 * const loop = createLoop({ model: replayModel('test/cassettes/refund.json'), tools, clock: virtualClock() });
 * const result = await loop.run({ goal: 'Refund order O-101' }); // same result and trace as when recorded
 */
export function replayModel(path: string, options: ReplayModelOptions = {}): ReplayingModel {
  if (typeof path !== 'string' || path === '') throw new TypeError('replayModel: expected the path of a cassette file');
  checkOptions(options);
  const cassette = readCassette(path);
  const backoff = options.backoff ?? (options.latency === 'recorded' ? 'wait' : 'skip');
  const redactor = createRedactor(options.redact);
  const clock = options.clock ?? systemClock;
  const recordedRequests = cassette.calls.map((call) => requestOf(cassette, call));
  const byKey = new Map<string, { call: RecordedCall; ordinal: number }[]>();
  cassette.calls.forEach((call, index) => {
    const list = byKey.get(call.key) ?? [];
    list.push({ call, ordinal: index + 1 });
    byKey.set(call.key, list);
  });
  const served = new Map<string, number>();
  let calls = 0;
  let replayed = 0;

  async function generate(request: ModelRequest): Promise<ModelResponse> {
    request.signal.throwIfAborted();
    const ordinal = ++calls;
    const data = cassetteRequest(request, redactor);
    const key = requestKey(data);
    const candidates = byKey.get(key);
    const count = served.get(key) ?? 0;
    const match = candidates?.[count];
    if (match === undefined) throw mismatch(path, ordinal, data, candidates, recordedRequests);
    served.set(key, count + 1);
    replayed++;
    if (options.latency === 'recorded' && match.call.latencyMs > 0)
      await clock.sleep(match.call.latencyMs, request.signal);
    if (match.call.interrupted !== undefined) {
      // Reproduced when the replayed run was cut short the same way while it waited; otherwise the runs part here.
      request.signal.throwIfAborted();
      throw new CassetteMismatchError({
        path,
        call: ordinal,
        nearestCall: match.ordinal,
        field: null,
        message: `was cut short (${match.call.interrupted}) after ${match.call.latencyMs} ms when recorded, but not in this replay; replay with latency: 'recorded' and the loop's clock to reproduce it`,
      });
    }
    if (match.call.error !== undefined) throw replayedError(match.call.error);
    // A fresh copy each time: the loop may keep or change what it receives.
    return structuredClone(match.call.response) as ModelResponse;
  }

  return {
    id: cassette.modelId,
    // The recorded model's provider, server and settings (each only when well formed): the replay is traced as the run was.
    ...modelFacts({ provider: cassette.provider, server: cassette.server, settings: cassette.settings }),
    ...(cassette.contextWindowTokens === undefined ? {} : { contextWindowTokens: cassette.contextWindowTokens }),
    ...(backoff === 'skip' ? { skipsBackoffWait: true } : {}),
    generate,
    path,
    get remaining() {
      return cassette.calls.length - replayed;
    },
    assertComplete() {
      const unused = cassette.calls.length - replayed;
      if (unused === 0) return;
      throw new LoopstateError({
        code: 'cassette_unused_calls',
        message: `cassette ${path}: ${unused} of ${cassette.calls.length} recorded call(s) were not replayed (called ${calls} times)`,
      });
    },
  };
}

function mismatch(
  path: string,
  ordinal: number,
  received: PlainData,
  candidates: readonly { ordinal: number }[] | undefined,
  recordedRequests: readonly PlainData[],
): CassetteMismatchError {
  if (candidates !== undefined && candidates.length > 0) {
    const ordinals = candidates.map((candidate) => candidate.ordinal).join(', ');
    return new CassetteMismatchError({
      path,
      call: ordinal,
      nearestCall: candidates.at(-1)?.ordinal ?? null,
      field: null,
      message: `repeats the request of recorded call ${ordinals}, ${candidates.length === 1 ? 'which was' : 'all of which were'} replayed already: the recording made this request only ${candidates.length} time(s)`,
    });
  }
  const nearest = nearestRecorded(recordedRequests, received, ordinal);
  if (nearest === null)
    return new CassetteMismatchError({
      path,
      call: ordinal,
      nearestCall: null,
      field: null,
      message: 'matches no recorded request: the cassette holds no calls',
    });
  const { index, difference } = nearest;
  const where =
    difference === null
      ? 'they differ only in how the request is keyed (record the cassette again)'
      : `first difference at ${difference.path}: recorded ${difference.recorded}, got ${difference.received}`;
  return new CassetteMismatchError({
    path,
    call: ordinal,
    nearestCall: index + 1,
    field: difference?.path ?? null,
    message: `matches no recorded request; nearest is recorded call ${index + 1}, ${where}`,
  });
}

/** The recorded error again: a `ModelCallError` with its kind, status and Retry-After, or an error with the recorded name, message and code. */
function replayedError(recorded: RecordedError): Error {
  if (recorded.kind !== undefined) {
    return new ModelCallError({
      kind: recorded.kind,
      message: recorded.message,
      ...(recorded.status === undefined ? {} : { status: recorded.status }),
      ...(recorded.retryAfterMs === undefined ? {} : { retryAfterMs: recorded.retryAfterMs }),
    });
  }
  const error = new Error(recorded.message);
  error.name = recorded.name;
  if (recorded.code !== undefined) Object.assign(error, { code: recorded.code });
  return error;
}
