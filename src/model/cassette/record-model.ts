/**
 * `recordModel`: a `Model` that passes every call to the model it wraps and writes what happened to a
 * cassette. The file is rewritten whole after each call, to a temporary file then renamed over the
 * cassette, so at any moment it is a complete, valid cassette (a crash loses at most the call in
 * flight), and it is written before the call's outcome reaches the loop, so it is complete on disk
 * when the run settles.
 */
import { closeSync, fsyncSync, mkdirSync, openSync, renameSync, rmSync, writeSync } from 'node:fs';
import { dirname } from 'node:path';
import { canonicalJson } from '../../progress/canonical-json.js';
import { isModelCallError } from '../../errors.js';
import { createRedactor, type Redactor, type RedactOptions } from '../../redaction/redact.js';
import { errorFields, thrownMessage, toError } from '../../redaction/describe-thrown.js';
import { systemClock, type Clock } from '../../runtime/clock.js';
import { interruptionOf, untilAborted } from '../../runtime/interruption.js';
import { isWellFormedResponse, modelResponseSchema, shapeProblems } from '../response-schema.js';
import type { Model, ModelRequest, ModelResponse } from '../types.js';
import { CassetteFileError } from './cassette-errors.js';
import { emptyCassette, serializeCassette, type Cassette, type RecordedCall, type RecordedError } from './cassette-format.js';
import { cassetteRequest, redactPlainData, requestKey, toPlainData, type PlainData } from './request-key.js';

/**
 * Options of `recordModel`.
 * @example
 * recordModel(model, 'run.json', { redact: { keys: ['customer_ssn'] } });
 */
export interface RecordModelOptions {
  /** Extra redaction rules on top of the built-in ones; pass the loop's `redact` option, and the same to `replayModel`. */
  redact?: RedactOptions;
  /** Where call latency is read from; defaults to the wall clock. */
  clock?: Clock;
}

/**
 * A model that records to a cassette.
 * @example
 * const model: RecordingModel = recordModel(openai, 'run.json'); model.recordedCalls; // 0
 */
export interface RecordingModel extends Model {
  /** The cassette file being written. */
  readonly path: string;
  /** Calls written to the cassette so far. */
  readonly recordedCalls: number;
}

type Outcome = { response: ModelResponse } | { error: unknown } | { interrupted: 'cancelled' | 'deadline' };

/**
 * Wraps `model` so every call it answers, or fails, is written to the cassette at `path` (created or
 * replaced): the redacted request filed under its key, the response (or the error, so a retried 429
 * replays as a 429), and the latency. A call cut short by the loop's per-call timeout is recorded as
 * that timeout; one cut short by a cancel or the run's deadline is recorded as interrupted, after its
 * latency (`replayModel` with `latency: 'recorded'` and the loop's clock reproduces it). Secrets are redacted before anything is written, with the built-in rules and `redact`; a
 * reply that quoted a secret therefore replays with `[redacted]` in its place. Writes are synchronous,
 * so a call's entry is on disk before its outcome reaches the loop, even for a call the loop abandoned.
 * @example
 * const loop = createLoop({ model: recordModel(openaiModel({ model: 'gpt-4.1-mini' }), 'test/cassettes/refund.json'), tools });
 * await loop.run({ goal: 'Refund order O-101' }); // later, offline: createLoop({ model: replayModel('test/cassettes/refund.json'), tools })
 */
export function recordModel(model: Model, path: string, options: RecordModelOptions = {}): RecordingModel {
  if (typeof model?.generate !== 'function') throw new TypeError('recordModel: expected a Model ({ id, generate(request) }) to wrap');
  if (typeof path !== 'string' || path === '') throw new TypeError('recordModel: expected the path of the cassette file to write');
  const redactor = createRedactor(options.redact);
  const clock = options.clock ?? systemClock;
  const cassette: Cassette = emptyCassette(model.id, model.contextWindowTokens);
  const writer = new CassetteWriter(path, cassette, redactor);

  async function generate(request: ModelRequest): Promise<ModelResponse> {
    writer.throwIfFailed();
    request.signal.throwIfAborted();
    const data = cassetteRequest(request, redactor);
    const startedAt = clock.now();
    let recorded = false;
    const record = (outcome: Outcome) => {
      if (recorded) return;
      recorded = true;
      writer.append(data, outcome, elapsedSince(clock, startedAt));
    };
    // Recorded now, before the loop moves on: the per-call timeout aborts with the ModelCallError the loop sees; a cancel or deadline with a RunInterruption.
    const onAbort = () => {
      const reason: unknown = request.signal.reason;
      record(isModelCallError(reason) ? { error: reason } : { interrupted: interruptionOf(request.signal).kind });
    };
    request.signal.addEventListener('abort', onAbort, { once: true });
    try {
      const response = await untilAborted(Promise.resolve().then(() => model.generate(request)), request.signal);
      record({ response });
      writer.throwIfFailed();
      return response;
    } catch (error) {
      if (!request.signal.aborted) record({ error });
      writer.throwIfFailed();
      throw error;
    } finally {
      request.signal.removeEventListener('abort', onAbort);
    }
  }

  return {
    id: model.id,
    ...(model.contextWindowTokens === undefined ? {} : { contextWindowTokens: model.contextWindowTokens }),
    generate,
    path,
    get recordedCalls() {
      return cassette.calls.length;
    },
  };
}

/** Never throws (this runs in an abort listener too); a clock that went backwards or broke counts 0 ms, so the file stays readable. */
function elapsedSince(clock: Clock, startedAt: number): number {
  try {
    const elapsed = clock.now() - startedAt;
    return Number.isFinite(elapsed) ? Math.max(0, elapsed) : 0;
  } catch {
    return 0;
  }
}

/** Owns the cassette in memory and on disk; a failed write is kept and thrown by the next call. */
class CassetteWriter {
  #failure: CassetteFileError | null = null;
  readonly #messageIndex = new Map<string, number>();
  readonly #toolIndex = new Map<string, number>();
  readonly #occurrences = new Map<string, number>();

  constructor(
    readonly path: string,
    readonly cassette: Cassette,
    readonly redactor: Redactor,
  ) {}

  throwIfFailed(): void {
    if (this.#failure !== null) throw this.#failure;
  }

  append(request: { [key: string]: PlainData }, outcome: Outcome, latencyMs: number): void {
    const key = requestKey(request);
    const occurrence = this.#occurrences.get(key) ?? 0;
    this.#occurrences.set(key, occurrence + 1);
    const { messages, tools, ...fields } = request;
    // A non-array `messages` or `tools` (some future request shape) stays a plain field, so the key still covers it.
    if (messages !== undefined && !Array.isArray(messages)) fields.messages = messages;
    if (tools !== undefined && !Array.isArray(tools)) fields.tools = tools;
    const call: RecordedCall = {
      key,
      occurrence,
      request: {
        ...(Array.isArray(messages) ? { messages: messages.map((message) => this.#pooled(this.cassette.messages, this.#messageIndex, message)) } : {}),
        ...(Array.isArray(tools) ? { tools: tools.map((tool) => this.#pooled(this.cassette.tools, this.#toolIndex, tool)) } : {}),
        ...(Object.keys(fields).length > 0 ? { fields } : {}),
      },
      latencyMs,
      ...this.#recordedOutcome(outcome),
    };
    this.cassette.calls.push(call);
    this.#write();
  }

  #pooled(pool: Record<string, unknown>[], index: Map<string, number>, item: PlainData): number {
    const text = canonicalJson(item);
    const known = index.get(text);
    if (known !== undefined) return known;
    pool.push(item as Record<string, unknown>);
    index.set(text, pool.length - 1);
    return pool.length - 1;
  }

  #recordedOutcome(outcome: Outcome): Pick<RecordedCall, 'response' | 'error' | 'interrupted'> {
    if ('interrupted' in outcome) return { interrupted: outcome.interrupted };
    if ('error' in outcome) return { error: recordedError(outcome.error, this.redactor) };
    // A malformed reply fails the run; record the failure the loop reports for it, so replay fails the same way.
    if (!isWellFormedResponse(outcome.response)) {
      const problems = shapeProblems(modelResponseSchema, outcome.response) ?? 'unknown shape';
      return { error: { name: 'ModelCallError', message: `the model returned a malformed response: ${problems}`, code: 'model_unknown', kind: 'unknown' } };
    }
    return { response: redactPlainData(toPlainData(outcome.response), this.redactor) as RecordedCall['response'] };
  }

  #write(): void {
    const temporary = `${this.path}.${process.pid}.tmp`;
    try {
      mkdirSync(dirname(this.path), { recursive: true });
      const descriptor = openSync(temporary, 'w');
      try {
        writeSync(descriptor, serializeCassette(this.cassette));
        fsyncSync(descriptor);
      } finally {
        closeSync(descriptor);
      }
      renameSync(temporary, this.path);
    } catch (error) {
      try {
        rmSync(temporary, { force: true });
      } catch {
        // Nothing was created there (its folder is missing or not a folder).
      }
      this.#failure ??= new CassetteFileError({ code: 'cassette_write_failed', path: this.path, problem: `could not be written (${thrownMessage(error)})`, cause: error });
    }
  }
}

function recordedError(thrown: unknown, redactor: Redactor): RecordedError {
  if (isModelCallError(thrown)) {
    const { kind, status, retryAfterMs } = thrown;
    return {
      name: 'ModelCallError',
      message: redactor.text(thrownMessage(thrown)),
      code: `model_${kind}`,
      kind,
      ...(typeof status === 'number' && Number.isInteger(status) ? { status } : {}),
      ...(typeof retryAfterMs === 'number' && Number.isFinite(retryAfterMs) && retryAfterMs >= 0 ? { retryAfterMs } : {}),
    };
  }
  const { name, message, code } = errorFields(toError(thrown));
  return { name: redactor.text(name), message: redactor.text(message), ...(code === undefined ? {} : { code: redactor.text(code) }) };
}
