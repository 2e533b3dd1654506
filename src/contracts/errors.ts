/**
 * One error base with a stable snake_case `code`. Running out of a budget is a stop reason,
 * never an exception: these are for misconfiguration and for failures the caller must see.
 */
import type { LoopstateErrorCode } from './error-codes.js';
import type { ModelUsage } from './model.js';

export interface LoopstateErrorOptions {
  code: LoopstateErrorCode;
  message: string;
  cause?: unknown;
}

/**
 * Base class of every error loopstate throws.
 * @example
 * try { createLoop(config) } catch (error) { if (error instanceof LoopstateError) console.error(error.code) }
 */
export class LoopstateError extends Error {
  readonly code: LoopstateErrorCode;
  constructor({ code, message, cause }: LoopstateErrorOptions) {
    super(message, cause === undefined ? undefined : { cause });
    this.name = new.target.name;
    this.code = code;
  }
}

export interface ConfigIssue {
  /** Dotted path of the bad field, e.g. `limits.maxSteps` or `tools[1].name`. */
  path: string;
  /** What was expected there. */
  message: string;
}

/**
 * What a `LoopConfigError` is about: the `createLoop` config, or the input of one `run()`.
 * @example
 * if (error instanceof LoopConfigError && error.scope === 'run_input') respond(400, error.message);
 */
export type ConfigErrorScope = 'config' | 'run_input';

/**
 * Thrown by `createLoop` before anything runs when its config is invalid, and returned as a rejection
 * by `run()` when its input is (`scope: 'run_input'`, message "Invalid run input"); names every bad
 * field. The `code` is always `invalid_config`, whichever the scope.
 * @example
 * createLoop({ model, limits: { maxSteps: 0 } }) // LoopConfigError: limits.maxSteps: Too small: expected number to be >0
 */
export class LoopConfigError extends LoopstateError {
  readonly issues: readonly ConfigIssue[];
  readonly scope: ConfigErrorScope;
  constructor({
    issues,
    cause,
    scope = 'config',
  }: {
    issues: readonly ConfigIssue[];
    cause?: unknown;
    scope?: ConfigErrorScope;
  }) {
    super({
      code: 'invalid_config',
      message: `Invalid ${scope === 'run_input' ? 'run input' : 'loop config'}:\n${issues.map((issue) => `  - ${issue.path || '(root)'}: ${issue.message}`).join('\n')}`,
      cause,
    });
    this.issues = issues;
    this.scope = scope;
  }
}

/**
 * The kind of a failed model call; decides which retry layer (if any) handles it. `refused` is a
 * reply the provider withheld (a refusal or its content filter): fatal, never retried.
 * @example
 * const kind: ModelErrorKind = status === 429 ? 'rate_limited' : 'server';
 */
export type ModelErrorKind =
  'rate_limited' | 'server' | 'timeout' | 'connection' | 'bad_request' | 'auth' | 'refused' | 'unknown';

const RETRYABLE_KINDS: ReadonlySet<ModelErrorKind> = new Set(['rate_limited', 'server', 'timeout', 'connection']);
const MODEL_ERROR_KINDS: ReadonlySet<string> = new Set<ModelErrorKind>([
  ...RETRYABLE_KINDS,
  'bad_request',
  'auth',
  'refused',
  'unknown',
]);

/**
 * The kind of a failed HTTP model call by its status, for adapters: 429 rate limited; 408 a timeout and 409 a
 * server conflict (both transient); 401 and 403 auth; other 5xx server; other 4xx a bad request.
 * @example
 * modelErrorKindOfStatus(503) // 'server'
 */
export function modelErrorKindOfStatus(status: number): ModelErrorKind {
  if (status === 429) return 'rate_limited';
  if (status === 408) return 'timeout';
  if (status === 401 || status === 403) return 'auth';
  if (status === 409 || status >= 500) return 'server';
  if (status >= 400) return 'bad_request';
  return 'unknown';
}

/** Shared by every installed copy of loopstate (`Symbol.for`), so classification never depends on `instanceof`. */
const MODEL_CALL_ERROR_BRAND = Symbol.for('loopstate.ModelCallError');

/**
 * What the loop reads from a failed model call: a `ModelCallError` of this or any other installed copy
 * of loopstate, or an error shaped like one (`name: 'ModelCallError'` and a known `kind`).
 * @example
 * if (isModelCallError(error)) console.log(error.kind, error.status);
 */
export interface ModelCallErrorLike {
  readonly name: string;
  readonly message: string;
  readonly kind: ModelErrorKind;
  readonly status?: number | undefined;
  readonly retryAfterMs?: number | undefined;
  /** Tokens the provider reported for the call before it failed (a stream's usage, then a cut): billed, so counted. */
  readonly usage?: ModelUsage | undefined;
}

/**
 * True for a `ModelCallError` from any installed copy of loopstate (it carries a shared brand) and for
 * an error shaped like one; never throws, even on an object with throwing getters.
 * @example
 * const transient = isModelCallError(error) && isRetryableModelErrorKind(error.kind);
 */
export function isModelCallError(value: unknown): value is ModelCallErrorLike {
  try {
    if (typeof value !== 'object' || value === null) return false;
    const candidate = value as Record<PropertyKey, unknown>;
    const branded = candidate[MODEL_CALL_ERROR_BRAND] === true || candidate.name === 'ModelCallError';
    return branded && typeof candidate.kind === 'string' && MODEL_ERROR_KINDS.has(candidate.kind);
  } catch {
    return false;
  }
}

/**
 * True for the kinds retried with backoff: 429, 5xx, timeout and connection failures.
 * @example
 * isRetryableModelErrorKind('rate_limited') // true; 'auth' is false
 */
export function isRetryableModelErrorKind(kind: ModelErrorKind): boolean {
  return RETRYABLE_KINDS.has(kind);
}

/**
 * The failed model call's error, when it is one of the retryable kinds; null otherwise (and for anything
 * that is not a model call error at all). Reads `retryAfterMs` only when it is a usable number.
 * @example
 * const transient = retryableModelError(error); if (transient) await sleep(transient.retryAfterMs ?? 500);
 */
export function retryableModelError(
  value: unknown,
): { message: string; kind: ModelErrorKind; retryAfterMs: number | undefined; status: number | undefined } | null {
  if (!isModelCallError(value) || !RETRYABLE_KINDS.has(value.kind)) return null;
  try {
    const retryAfterMs =
      typeof value.retryAfterMs === 'number' && Number.isFinite(value.retryAfterMs) ? value.retryAfterMs : undefined;
    const status = Number.isInteger(value.status) ? value.status : undefined;
    return { message: String(value.message), kind: value.kind, retryAfterMs, status };
  } catch {
    return { message: 'model call failed', kind: value.kind, retryAfterMs: undefined, status: undefined };
  }
}

/**
 * A failed model call, as a model adapter reports it. Transient kinds (429, 5xx, timeout,
 * connection) are retried with backoff; the rest are fatal. `usage`, when the provider reported it before
 * the call failed, is counted against the run's budgets like a reply's.
 * @example
 * throw new ModelCallError({ kind: 'rate_limited', status: 429, retryAfterMs: 2000, message: 'slow down' })
 */
export class ModelCallError extends LoopstateError {
  /** The brand `isModelCallError` recognises across installed copies. */
  readonly [MODEL_CALL_ERROR_BRAND] = true;
  readonly kind: ModelErrorKind;
  readonly status: number | undefined;
  readonly retryAfterMs: number | undefined;
  readonly usage: ModelUsage | undefined;
  constructor(options: {
    kind: ModelErrorKind;
    message: string;
    status?: number;
    retryAfterMs?: number;
    usage?: ModelUsage;
    cause?: unknown;
  }) {
    super({ code: `model_${options.kind}`, message: options.message, cause: options.cause });
    this.kind = options.kind;
    this.status = options.status;
    this.retryAfterMs = options.retryAfterMs;
    this.usage = options.usage;
  }

  get retryable(): boolean {
    return RETRYABLE_KINDS.has(this.kind);
  }

  /**
   * Like `instanceof ModelCallError`, but also true for one thrown by another installed copy of loopstate.
   * @example
   * if (ModelCallError.is(error) && error.kind === 'auth') rotateKey();
   */
  static is(value: unknown): value is ModelCallErrorLike {
    return isModelCallError(value);
  }
}

/**
 * An adapter's package (an optional peer dependency of loopstate) is not installed: `code` is
 * `missing_dependency`, and the message names the package and the command that installs it.
 * @example
 * try { sqliteStore({ path: 'loops.db' }) } catch (error) { if (error instanceof MissingDependencyError) console.error(error.installCommand) }
 */
export class MissingDependencyError extends LoopstateError {
  /** The package that could not be loaded, e.g. `better-sqlite3`. */
  readonly packageName: string;
  /** What installs it, e.g. `npm install better-sqlite3@~12.11`. */
  readonly installCommand: string;
  constructor({
    packageName,
    installCommand,
    feature,
    cause,
  }: {
    packageName: string;
    installCommand: string;
    feature: string;
    cause?: unknown;
  }) {
    super({
      code: 'missing_dependency',
      message: `${feature} needs the package ${packageName}, which is not installed: run \`${installCommand}\``,
      cause,
    });
    this.packageName = packageName;
    this.installCommand = installCommand;
  }
}
