/** The CLI's input and output, passed to every command so tests run them in process. */
import type { ProgressStream } from './run-command.js';

/** Where the CLI writes; each `out`/`err` call is one line or block, without a trailing newline. */
export interface CliIo {
  out(text: string): void;
  err(text: string): void;
  /** Raw stderr, for live progress redrawn in place on a terminal; without it progress is plain lines on `err`. */
  progress?: ProgressStream;
  env?: Readonly<Record<string, string | undefined>>;
  cwd?: string;
}
