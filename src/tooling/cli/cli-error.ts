/**
 * The CLI's own failures, each with the exit code it ends the process with. Anything else thrown inside a
 * command is unexpected and exits 1.
 */
import { LoopstateError } from '../../contracts/errors.js';

/** Exit codes of every `loopstate` command (documented in `--help` and the README). */
export const EXIT_CODES = Object.freeze({
  /** The command did what it says; for `run`, the run succeeded. */
  success: 0,
  /**
   * The run finished without succeeding (failed or needs_human), or something unexpected went wrong (the
   * command left waiting on a promise nothing can settle any more included).
   */
  failure: 1,
  /** Bad usage: unknown command, example or option, a missing or conflicting argument. */
  usage: 2,
  /** The loop could not be loaded: no such file, no loop exported, an invalid config, no goal. */
  loopFile: 3,
  /** The model could not be set up: a missing API key, an unreadable cassette. */
  modelSetup: 4,
});

/**
 * What the bin says when the process runs out of work before the command finished: the command awaits a
 * promise that nothing (no timer, socket or child process) can settle any more.
 */
export const NEVER_SETTLED_MESSAGE =
  'the command cannot finish: it waits on a promise that nothing can settle any more (no timer, socket or process is left). ' +
  'An evaluator that never settles with limits.evaluatorTimeoutMs and limits.deadlineMs both Infinity, a store call that never ' +
  'returns, or a top-level await in the loop file that never settles does this';

export type CliErrorKind = 'usage' | 'loop_file' | 'model_setup';

const EXIT_CODE_OF: Record<CliErrorKind, number> = {
  usage: EXIT_CODES.usage,
  loop_file: EXIT_CODES.loopFile,
  model_setup: EXIT_CODES.modelSetup,
};

/**
 * A failure the user can fix, said in one message; `code` is `cli_<kind>`.
 * @example
 * throw new CliError({ kind: 'loop_file', message: 'no such file: my-loop.ts' });
 */
export class CliError extends LoopstateError {
  readonly kind: CliErrorKind;
  readonly exitCode: number;
  constructor({ kind, message, cause }: { kind: CliErrorKind; message: string; cause?: unknown }) {
    super({ code: `cli_${kind}`, message, cause });
    this.kind = kind;
    this.exitCode = EXIT_CODE_OF[kind];
  }
}
