/**
 * `recordModel`: a `Model` that passes every call to the model it wraps and writes what happened to a
 * cassette. The file is rewritten whole after each call, to a temporary file then renamed over the
 * cassette, so at any moment it is a complete, valid cassette (a crash loses at most the call in
 * flight), and it is written before the call's outcome reaches the loop, so it is complete on disk
 * when the run settles. One recorder per cassette: it holds the cassette's lock from its first call.
 */
import { isModelCallError } from '../../contracts/errors.js';
import { createRedactor, type RedactOptions } from '../../engine/redaction/redact.js';
import { systemClock, type Clock } from '../../engine/runtime/clock.js';
import { interruptionOf, untilAborted } from '../../engine/runtime/interruption.js';
import type { Model, ModelRequest, ModelResponse } from '../../contracts/model.js';
import { modelFacts } from '../../engine/trace/model-facts.js';
import { emptyCassette, type Cassette } from './cassette-format.js';
import { CassetteWriter, type Outcome } from './cassette-writer.js';
import { cassetteRequest } from './request-key.js';

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
  /**
   * Releases the cassette's lock, so another recorder may record it; later calls fail. Without it the
   * lock is released when the process exits (a lock left by a killed process is taken over).
   */
  close(): void;
}

/**
 * Wraps `model` so every call it answers, or fails, is written to the cassette at `path` (created or
 * replaced): the redacted request filed under its key, the response (or the error, so a retried 429
 * replays as a 429), and the latency. A call cut short by the loop's per-call timeout is recorded as
 * that timeout; one cut short by a cancel or the run's deadline is recorded as interrupted, after its
 * latency (`replayModel` with `latency: 'recorded'` and the loop's clock reproduces it). Secrets are redacted before anything is written, with the built-in rules and `redact`; a
 * reply that quoted a secret therefore replays with `[redacted]` in its place. Writes are synchronous,
 * so a call's entry is on disk before its outcome reaches the loop, even for a call the loop abandoned.
 * From its first call until `close()` (or the process's exit) the recorder holds `<path>.lock`: a
 * second recorder of the same cassette, in this process or another, fails its first call with
 * `CassetteFileError` (`cassette_locked`) naming the holder, before that call reaches its model. The
 * file is written atomically (an exclusive temporary file with a random name, renamed over it) and
 * never through a symbolic link: a cassette path that is a link fails with `cassette_write_failed`.
 * @example
 * const loop = createLoop({ model: recordModel(openaiModel({ model: 'gpt-4.1-mini' }), 'test/cassettes/refund.json'), tools });
 * await loop.run({ goal: 'Refund order O-101' }); // later, offline: createLoop({ model: replayModel('test/cassettes/refund.json'), tools })
 */
export function recordModel(model: Model, path: string, options: RecordModelOptions = {}): RecordingModel {
  if (typeof model?.generate !== 'function')
    throw new TypeError('recordModel: expected a Model ({ id, generate(request) }) to wrap');
  if (typeof path !== 'string' || path === '')
    throw new TypeError('recordModel: expected the path of the cassette file to write');
  const redactor = createRedactor(options.redact);
  const clock = options.clock ?? systemClock;
  const facts = modelFacts(model);
  // Redacted like everything else in the file: a server address or a setting may name what should not be kept.
  const cassette: Cassette = emptyCassette(model.id, model.contextWindowTokens, redactor.strings(facts));
  const writer = new CassetteWriter(path, cassette, redactor);

  async function generate(request: ModelRequest): Promise<ModelResponse> {
    writer.throwIfFailed();
    request.signal.throwIfAborted();
    writer.begin();
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
      const response = await untilAborted(
        Promise.resolve().then(() => model.generate(request)),
        request.signal,
      );
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
    ...facts,
    ...(model.contextWindowTokens === undefined ? {} : { contextWindowTokens: model.contextWindowTokens }),
    generate,
    path,
    get recordedCalls() {
      return cassette.calls.length;
    },
    close: () => writer.close(),
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
