/**
 * What a recorder keeps: the cassette in memory, and on disk after every call. The writer holds the
 * cassette's lock from its first call until it is closed, so no other recorder writes the same file,
 * and it rewrites the file whole, atomically, so a process killed at any moment leaves a valid
 * cassette. A failure (the lock held elsewhere, a write that failed) is kept and thrown by every
 * later call: a cassette with a gap would replay a different run.
 */
import { canonicalJson } from '../../engine/progress/canonical-json.js';
import { isModelCallError } from '../../contracts/errors.js';
import type { Redactor } from '../../engine/redaction/redact.js';
import { errorFields, thrownMessage, toError } from '../../engine/redaction/describe-thrown.js';
import { isWellFormedResponse, modelResponseSchema, shapeProblems } from '../../contracts/model-response-schema.js';
import type { ModelResponse } from '../../contracts/model.js';
import { CassetteFileError } from './cassette-errors.js';
import { refuseSymbolicLink, removeLeftoverTemporaries, writeCassetteText } from './cassette-file.js';
import {
  MAX_CASSETTE_DEPTH,
  serializeCassette,
  type Cassette,
  type RecordedCall,
  type RecordedError,
} from './cassette-format.js';
import { lockCassette, type CassetteLock } from './cassette-lock.js';
import { tooDeepAt } from './nesting-depth.js';
import { redactPlainData, requestKey, toPlainData, type PlainData } from './request-key.js';

/** How a recorded call ended. */
export type Outcome = { response: ModelResponse } | { error: unknown } | { interrupted: 'cancelled' | 'deadline' };

/**
 * Owns one cassette in memory and on disk.
 * @example
 * const writer = new CassetteWriter('run.json', emptyCassette('gpt-4.1-mini', undefined), redactor);
 * writer.begin(); writer.append(request, { response }, 120); writer.close();
 */
export class CassetteWriter {
  #failure: CassetteFileError | null = null;
  #lock: CassetteLock | null = null;
  #closed = false;
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

  /** Before a call reaches the wrapped model: takes the lock on the first call, so a refused recorder spends nothing. */
  begin(): void {
    this.throwIfFailed();
    if (this.#closed)
      throw new CassetteFileError({
        code: 'cassette_write_failed',
        path: this.path,
        problem: 'its recorder was closed; create a new recordModel to record again',
      });
    if (this.#lock !== null) return;
    try {
      this.#lock = lockCassette(this.path);
      refuseSymbolicLink(this.path);
    } catch (error) {
      throw this.#fail(error);
    }
    removeLeftoverTemporaries(this.path);
  }

  /** Kept for every later call; the lock is let go, since this recorder will never write again. */
  #fail(error: unknown): CassetteFileError {
    this.#failure ??=
      error instanceof CassetteFileError
        ? error
        : new CassetteFileError({
            code: 'cassette_write_failed',
            path: this.path,
            problem: `could not be written (${thrownMessage(error)})`,
            cause: error,
          });
    this.#lock?.release();
    return this.#failure;
  }

  /** Releases the lock; calls still in flight are not written. */
  close(): void {
    this.#closed = true;
    this.#lock?.release();
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
        ...(Array.isArray(messages)
          ? { messages: messages.map((message) => this.#pooled(this.cassette.messages, this.#messageIndex, message)) }
          : {}),
        ...(Array.isArray(tools)
          ? { tools: tools.map((tool) => this.#pooled(this.cassette.tools, this.#toolIndex, tool)) }
          : {}),
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
      return {
        error: {
          name: 'ModelCallError',
          message: `the model returned a malformed response: ${problems}`,
          code: 'model_unknown',
          kind: 'unknown',
        },
      };
    }
    return { response: redactPlainData(toPlainData(outcome.response), this.redactor) as RecordedCall['response'] };
  }

  #write(): void {
    if (this.#failure !== null) return;
    try {
      if (this.#lock === null || this.#closed)
        throw new CassetteFileError({
          code: 'cassette_write_failed',
          path: this.path,
          problem: `its recorder was closed before call ${this.cassette.calls.length} ended; that call was not written`,
        });
      this.#lock.assertHeld();
      // A cassette replayModel would refuse is never written: it names the field here, while the run can still be fixed.
      const tooDeep = tooDeepAt(this.cassette, MAX_CASSETTE_DEPTH);
      if (tooDeep !== null)
        throw new CassetteFileError({
          code: 'cassette_write_failed',
          path: this.path,
          problem: `call ${this.cassette.calls.length} was not written: ${tooDeep} nests more than ${MAX_CASSETTE_DEPTH} levels deep`,
        });
      writeCassetteText(this.path, serializeCassette(this.cassette));
    } catch (error) {
      this.#fail(error);
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
      ...(typeof retryAfterMs === 'number' && Number.isFinite(retryAfterMs) && retryAfterMs >= 0
        ? { retryAfterMs }
        : {}),
    };
  }
  const { name, message, code } = errorFields(toError(thrown));
  return {
    name: redactor.text(name),
    message: redactor.text(message),
    ...(code === undefined ? {} : { code: redactor.text(code) }),
  };
}
