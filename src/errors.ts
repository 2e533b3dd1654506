/**
 * One error base with a stable snake_case `code`. Running out of a budget is a stop reason,
 * never an exception: these are for misconfiguration and for failures the caller must see.
 */
export interface LoopstateErrorOptions {
  code: string;
  message: string;
  cause?: unknown;
}

/**
 * Base class of every error loopstate throws.
 * @example
 * try { createLoop(config) } catch (error) { if (error instanceof LoopstateError) console.error(error.code) }
 */
export class LoopstateError extends Error {
  readonly code: string;
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
 * Thrown by `createLoop` before anything runs when its config is invalid; names every bad field.
 * @example
 * createLoop({ model, limits: { maxSteps: 0 } }) // LoopConfigError: limits.maxSteps: Too small: expected number to be >0
 */
export class LoopConfigError extends LoopstateError {
  readonly issues: readonly ConfigIssue[];
  constructor({ issues, cause }: { issues: readonly ConfigIssue[]; cause?: unknown }) {
    super({
      code: 'invalid_config',
      message: `Invalid loop config:\n${issues.map((issue) => `  - ${issue.path || '(root)'}: ${issue.message}`).join('\n')}`,
      cause,
    });
    this.issues = issues;
  }
}

/**
 * The kind of a failed model call; decides which retry layer (if any) handles it.
 * @example
 * const kind: ModelErrorKind = status === 429 ? 'rate_limited' : 'server';
 */
export type ModelErrorKind = 'rate_limited' | 'server' | 'timeout' | 'connection' | 'bad_request' | 'auth' | 'unknown';

const RETRYABLE_KINDS: ReadonlySet<ModelErrorKind> = new Set(['rate_limited', 'server', 'timeout', 'connection']);

/**
 * A failed model call, as a model adapter reports it. Transient kinds (429, 5xx, timeout,
 * connection) are retried with backoff; the rest are fatal.
 * @example
 * throw new ModelCallError({ kind: 'rate_limited', status: 429, retryAfterMs: 2000, message: 'slow down' })
 */
export class ModelCallError extends LoopstateError {
  readonly kind: ModelErrorKind;
  readonly status: number | undefined;
  readonly retryAfterMs: number | undefined;
  constructor(options: { kind: ModelErrorKind; message: string; status?: number; retryAfterMs?: number; cause?: unknown }) {
    super({ code: `model_${options.kind}`, message: options.message, cause: options.cause });
    this.kind = options.kind;
    this.status = options.status;
    this.retryAfterMs = options.retryAfterMs;
  }

  get retryable(): boolean {
    return RETRYABLE_KINDS.has(this.kind);
  }
}

/**
 * An LLM judge answered with something that is not a verdict. It is not a verdict on the output,
 * so the loop never feeds it back to the main model: the run stops with `fatal_error`, its usage counted.
 * @example
 * throw new JudgeVerdictError({ judge: 'judge', message: 'the judge replied with no text', usage, modelId: 'gpt-4.1-mini' })
 */
export class JudgeVerdictError extends LoopstateError {
  readonly judge: string;
  readonly usage: { inputTokens: number; outputTokens: number } | undefined;
  readonly modelId: string | undefined;
  constructor(options: { judge: string; message: string; usage?: { inputTokens: number; outputTokens: number }; modelId?: string }) {
    super({ code: 'judge_invalid_verdict', message: `LLM judge "${options.judge}" gave no usable verdict: ${options.message}` });
    this.judge = options.judge;
    this.usage = options.usage;
    this.modelId = options.modelId;
  }
}

/**
 * Thrown by the scripted test model when it is called more times than it has steps,
 * or by `assertComplete()` when steps were left unused.
 * @example
 * const model = scriptedModel([reply('done')]); await model.generate(request); await model.generate(request) // ScriptExhaustedError
 */
export class ScriptExhaustedError extends LoopstateError {
  constructor(message: string) {
    super({ code: 'script_exhausted', message });
  }
}
