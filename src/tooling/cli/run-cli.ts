/**
 * The `loopstate` command line as a function of its arguments: output goes through `io` and the
 * exit code is returned, so tests run it in process. `bin.ts` is the thin bin around it; each
 * command lives in its own module, imported when that command runs: `loopstate verify` in a pre-commit hook
 * then loads no model adapter, store, cassette, MCP client or viewer.
 */
import { BUNDLED_EXAMPLES, DEFAULT_EXAMPLE, type BundledExample } from './bundled-examples.js';
import { EXIT_CODES } from './cli-error.js';
import { packageVersion } from './package-version.js';
import type { CliIo } from './cli-io.js';
import { terminalSafe } from './terminal-safe.js';
import { parseArgs } from 'node:util';

export interface RunCliOptions {
  /** Examples by name; defaults to the bundled ones (tests inject their own). */
  examples?: Readonly<Record<string, BundledExample>>;
  /** Stops a long-running command (`inspect`); defaults to Ctrl-C (SIGINT) or SIGTERM. */
  stop?: AbortSignal;
}

/** Exit codes: 0 success, 1 the run did not succeed (or something unexpected threw), 2 bad usage, 3 loop file, 4 model setup. */
export const EXIT_SUCCESS = EXIT_CODES.success;
export const EXIT_FAILURE = EXIT_CODES.failure;
export const EXIT_USAGE = EXIT_CODES.usage;

function usage(examples: Readonly<Record<string, BundledExample>>): string {
  const names = Object.keys(examples);
  const width = Math.max(...names.map((name) => name.length));
  return `Usage: loopstate <command> [options]

Commands:
  run <example | loop file>   run a loop with live progress, print its result and where its trace went
  example [name]              run a bundled example offline (default: ${DEFAULT_EXAMPLE}); same as run <name>
  inspect <run.jsonl>         serve a local viewer of a JSONL trace on 127.0.0.1 (statechart, path taken,
                              time travel over its steps, step table); works offline; Ctrl-C stops it
                              (--port N: the port, default a free one; --run <id>: which run of the file,
                              default the latest; the others are listed)
  verify <loop file>          prove a loop is bounded, or print a counterexample (loopstate verify --help)
  learning show|reset         show or clear what loops learned across runs in a store (--store <file | url>;
                              loopstate learning --help)
  runs <loop file> --store S  list and show a store's runs; approve, reject, review, cancel, resume them
                              (loopstate runs --help)
  console <loop file> --store S
                              serve a local page of a store's runs on 127.0.0.1: pending approvals and
                              reviews with their buttons, each run in the viewer (loopstate console --help)
  help [command]              show this help, or a command's

Examples (offline, no API key):
${names.map((name) => `  ${name.padEnd(width)}  ${examples[name]?.description ?? ''}`).join('\n')}

Options:
  -h, --help                  show help (after a command: that command's options and exit codes)
  -v, --version               print the version

Run \`loopstate run --help\` for the run options (--model, --replay, --record, --trace, --json, --quiet).`;
}

/**
 * Runs the `loopstate` CLI with `argv` (without node and script) and returns the exit code.
 * @example
 * process.exitCode = await runCli(process.argv.slice(2), { out: console.log, err: console.error });
 */
export async function runCli(argv: readonly string[], io: CliIo, options: RunCliOptions = {}): Promise<number> {
  // Whatever a command prints may hold a model's reply, a trace's ids or a file's names: no control sequence reaches the terminal.
  const safeIo: CliIo = { ...io, out: (text) => io.out(terminalSafe(text)), err: (text) => io.err(terminalSafe(text)) };
  try {
    return await dispatch(argv, safeIo, options.examples ?? BUNDLED_EXAMPLES, options.stop);
  } catch (error) {
    // The bin must end with a message and an exit code, never an unhandled rejection.
    safeIo.err(`loopstate: ${await describeThrown(error)}`);
    return EXIT_FAILURE;
  }
}

/**
 * `thrownMessage`, imported when something was thrown: `loopstate/internal` loads the engine (~240 modules, ~0.1 s),
 * which `--version`, `--help` and a usage error do without, and each command imports for itself when it runs. When
 * that import fails too (a broken install), the error's own message, so something is always printed.
 */
async function describeThrown(error: unknown): Promise<string> {
  return import('../../internal.js').then(
    (internal) => internal.thrownMessage(error),
    () => plainMessage(error),
  );
}

/** An error's message, or the thrown value as a string (a value whose `toString` throws too: a fixed text). */
function plainMessage(error: unknown): string {
  try {
    return error instanceof Error ? error.message : String(error);
  } catch {
    return 'an unprintable value was thrown';
  }
}

async function dispatch(
  argv: readonly string[],
  io: CliIo,
  examples: Readonly<Record<string, BundledExample>>,
  stop?: AbortSignal,
): Promise<number> {
  const [command, ...rest] = argv;
  const commandIo = { ...io, examples };
  switch (command) {
    case undefined:
      io.err(usage(examples));
      return EXIT_USAGE;
    case '-v':
    case '--version':
      io.out(packageVersion());
      return EXIT_SUCCESS;
    case '-h':
    case '--help':
      io.out(usage(examples));
      return EXIT_SUCCESS;
    case 'help':
      return rest[0] === undefined
        ? (io.out(usage(examples)), EXIT_SUCCESS)
        : dispatch([rest[0], '--help'], io, examples, stop);
    case 'run':
      return (await import('./run-command.js')).runCommand(rest, commandIo);
    case 'example':
      return (await import('./run-command.js')).runExampleCommand(rest, commandIo);
    case 'verify':
      return (await import('./verify-command.js')).runVerifyCommand(rest, io);
    case 'inspect':
      return inspect(rest, io, examples, stop);
    case 'learning':
      return (await import('./commands/learning.js')).learningCommand(rest, io);
    case 'runs':
      return (await import('./commands/runs.js')).runsCommand(rest, io);
    case 'console': {
      const { consoleCommand } = await import('./commands/console.js');
      return stop === undefined
        ? untilInterrupted((signal) => consoleCommand(rest, io, signal))
        : consoleCommand(rest, io, stop);
    }
    default:
      io.err(`loopstate: unknown command "${command}"\n\n${usage(examples)}`);
      return EXIT_USAGE;
  }
}

async function inspect(
  argv: readonly string[],
  io: CliIo,
  examples: Readonly<Record<string, BundledExample>>,
  stop: AbortSignal | undefined,
): Promise<number> {
  let parsed;
  try {
    parsed = parseArgs({
      args: [...argv],
      allowPositionals: true,
      options: { port: { type: 'string' }, run: { type: 'string' }, help: { type: 'boolean', short: 'h' } },
    });
  } catch (error) {
    io.err(`loopstate inspect: ${await describeThrown(error)}\n\n${usage(examples)}`);
    return EXIT_USAGE;
  }
  if (parsed.values.help) {
    io.out(usage(examples));
    return EXIT_SUCCESS;
  }
  const { inspectCommand } = await import('./commands/inspect.js');
  const serve = (signal: AbortSignal) =>
    inspectCommand(
      { tracePath: parsed.positionals[0], port: parsed.values.port, runId: parsed.values.run, stop: signal },
      io,
    );
  return stop === undefined ? untilInterrupted(serve) : serve(stop);
}

/** Aborts on Ctrl-C or SIGTERM; the listeners go once the command is done. */
async function untilInterrupted(run: (stop: AbortSignal) => Promise<number>): Promise<number> {
  const controller = new AbortController();
  const abort = () => controller.abort();
  process.once('SIGINT', abort);
  process.once('SIGTERM', abort);
  try {
    return await run(controller.signal);
  } finally {
    process.off('SIGINT', abort);
    process.off('SIGTERM', abort);
  }
}
