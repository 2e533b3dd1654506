/**
 * What goes wrong with a cassette: a file that cannot be used (missing, corrupt, from a newer
 * loopstate, not writable, being recorded by another recorder) and a replayed request that was never recorded.
 */
import { LoopstateError } from '../../contracts/errors.js';

/**
 * Why a cassette file cannot be used: `cassette_not_found`, `cassette_unreadable` (not a regular file,
 * too large, no permission), `cassette_corrupt` (not JSON, cut short, wrong shape, nested too deep, or
 * edited so a request no longer matches its key), `cassette_version_unsupported` (written by a newer
 * loopstate), `cassette_write_failed`, or `cassette_locked` (another recorder is recording it).
 * @example
 * const code: CassetteFileErrorCode = 'cassette_corrupt';
 */
export type CassetteFileErrorCode =
  | 'cassette_not_found'
  | 'cassette_unreadable'
  | 'cassette_corrupt'
  | 'cassette_version_unsupported'
  | 'cassette_write_failed'
  | 'cassette_locked';

/**
 * A cassette file that cannot be read or written; the message names the path and the problem.
 * Reading is all or nothing: a cassette is never half-read.
 * @example
 * try { replayModel('missing.json') } catch (error) { if (error instanceof CassetteFileError) console.error(error.path, error.code) }
 */
export class CassetteFileError extends LoopstateError {
  readonly path: string;
  constructor(options: { code: CassetteFileErrorCode; path: string; problem: string; cause?: unknown }) {
    super({ code: options.code, message: `cassette ${options.path}: ${options.problem}`, cause: options.cause });
    this.path = options.path;
  }
}

/**
 * A replayed model call whose request matches no recorded one. It fails the run closed (`fatal_error`,
 * never retried) and says where the run left the recording: the call's ordinal, the nearest recorded
 * request and the first field that differs, with both values shortened.
 * @example
 * if (result.error?.code === 'cassette_mismatch') console.error(result.error.message);
 * // cassette run.json: model call 2 matches no recorded request; nearest is recorded call 2,
 * //   first difference at messages[3].content: recorded "{\"status\":\"shipped\"}", got "{\"status\":\"lost\"}"
 */
export class CassetteMismatchError extends LoopstateError {
  readonly path: string;
  /** The replayed call's ordinal, 1 for the model's first call. */
  readonly call: number;
  /** Ordinal of the nearest recorded call, or null when the cassette holds none. */
  readonly nearestCall: number | null;
  /** Path of the first differing field (`messages[3].content`), or null when the request was recorded but is used up. */
  readonly field: string | null;
  constructor(options: {
    path: string;
    call: number;
    nearestCall: number | null;
    field: string | null;
    message: string;
  }) {
    super({
      code: 'cassette_mismatch',
      message: `cassette ${options.path}: model call ${options.call} ${options.message}`,
    });
    this.path = options.path;
    this.call = options.call;
    this.nearestCall = options.nearestCall;
    this.field = options.field;
  }
}
