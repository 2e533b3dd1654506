/**
 * The `loopstate` command line as a function of its arguments: output goes through `io` and the
 * exit code is returned, so tests run it in process. `src/cli.ts` is the thin bin around it.
 */
import { parseArgs } from 'node:util';
import { formatResult } from '../../examples/format-result.js';
import { BUNDLED_EXAMPLES, DEFAULT_EXAMPLE, type ExampleRunner } from './bundled-examples.js';
import { thrownMessage } from '../redaction/describe-thrown.js';
import { packageVersion } from './package-version.js';
import { inspectCommand } from './commands/inspect.js';
import { runVerifyCommand } from './verify-command.js';

/** Where the CLI writes; each call is one line or block, without a trailing newline. */
export interface CliIo {
  out(text: string): void;
  err(text: string): void;
}

export interface RunCliOptions {
  /** Examples by name; defaults to the bundled ones (tests inject their own). */
  examples?: Readonly<Record<string, ExampleRunner>>;
  /** Stops a long-running command (`inspect`); defaults to Ctrl-C (SIGINT) or SIGTERM. */
  stop?: AbortSignal;
}

/** Exit codes: 0 success, 1 the example ran but did not succeed (or threw), 2 bad usage. */
export const EXIT_SUCCESS = 0;
export const EXIT_FAILURE = 1;
export const EXIT_USAGE = 2;

function usage(examples: Readonly<Record<string, ExampleRunner>>): string {
  return `Usage: loopstate <command>

Commands:
  example [name]     run a bundled example offline on the scripted model (default: ${DEFAULT_EXAMPLE})
                     names: ${Object.keys(examples).join(', ')}
  inspect <run.jsonl>
                     serve a local viewer of a JSONL trace on 127.0.0.1 (statechart, path taken,
                     time travel over its steps, step table); works offline; Ctrl-C stops it
  verify <loop file> prove a loop is bounded, or print a counterexample (loopstate verify --help)
Options:
  --json             print the full result (with trace) as JSON (example)
  --port N           inspect: the port to listen on (default 0: a free one)
  --run <id>         inspect: which run, when the file holds several
  -h, --help         show this help
  -v, --version      print the version`;
}

const messageOf = thrownMessage;

/**
 * Runs the `loopstate` CLI with `argv` (without node and script) and returns the exit code.
 * @example
 * process.exitCode = await runCli(process.argv.slice(2), { out: console.log, err: console.error });
 */
export async function runCli(argv: readonly string[], io: CliIo, options: RunCliOptions = {}): Promise<number> {
  try {
    return await dispatch(argv, io, options.examples ?? BUNDLED_EXAMPLES, options.stop);
  } catch (error) {
    // The bin must end with a message and an exit code, never an unhandled rejection.
    io.err(`loopstate: ${messageOf(error)}`);
    return EXIT_FAILURE;
  }
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

async function dispatch(argv: readonly string[], io: CliIo, examples: Readonly<Record<string, ExampleRunner>>, stop: AbortSignal | undefined): Promise<number> {
  // Each command with options of its own parses them itself.
  if (argv[0] === 'verify') return runVerifyCommand(argv.slice(1), io);
  let parsed;
  try {
    parsed = parseArgs({
      args: [...argv],
      allowPositionals: true,
      options: {
        json: { type: 'boolean' },
        port: { type: 'string' },
        run: { type: 'string' },
        help: { type: 'boolean', short: 'h' },
        version: { type: 'boolean', short: 'v' },
      },
    });
  } catch (error) {
    io.err(`loopstate: ${messageOf(error)}\n\n${usage(examples)}`);
    return EXIT_USAGE;
  }
  const { values, positionals } = parsed;
  if (values.version) {
    io.out(packageVersion());
    return EXIT_SUCCESS;
  }
  const [command, name = DEFAULT_EXAMPLE] = positionals;
  if (values.help) {
    io.out(usage(examples));
    return EXIT_SUCCESS;
  }
  if (command === undefined) {
    io.err(usage(examples));
    return EXIT_USAGE;
  }
  if (command === 'inspect') {
    const inspect = (signal: AbortSignal) => inspectCommand({ tracePath: positionals[1], port: values.port, runId: values.run, stop: signal }, io);
    return stop === undefined ? untilInterrupted(inspect) : inspect(stop);
  }
  if (command !== 'example') {
    io.err(`loopstate: unknown command "${command}"\n\n${usage(examples)}`);
    return EXIT_USAGE;
  }
  const example = Object.hasOwn(examples, name) ? examples[name] : undefined;
  if (example === undefined) {
    io.err(`loopstate: unknown example "${name}"; choose one of: ${Object.keys(examples).join(', ')}`);
    return EXIT_USAGE;
  }
  let result;
  try {
    result = await example();
  } catch (error) {
    io.err(`loopstate: example "${name}" threw: ${messageOf(error)}`);
    return EXIT_FAILURE;
  }
  io.out(values.json ? JSON.stringify(result, null, 2) : `loopstate example: ${name} (offline, scripted model)\n\n${formatResult(result)}`);
  return result.status === 'succeeded' ? EXIT_SUCCESS : EXIT_FAILURE;
}
