/**
 * `loopstate run <example | loop file>`: loads the loop, picks its model (the file's own, a real
 * OpenAI-compatible one, or a cassette), runs its goal with the live progress view on stderr, writes the
 * JSON lines trace, and prints the result (or `--json`).
 */
import { existsSync, mkdirSync, writeFileSync } from 'node:fs';
import { dirname, join, relative, isAbsolute } from 'node:path';
import { parseArgs } from 'node:util';
import { defaultRunId } from '../../internal.js';
import { type LoopConfig } from '../../index.js';
import { LoopConfigError } from '../../index.js';
import { createLoop } from '../../index.js';
import { CassetteFileError } from '../../adapters/cassette/index.js';
import { recordModel } from '../../adapters/cassette/index.js';
import { replayModel } from '../../adapters/cassette/index.js';
import { openaiModel } from '../../adapters/openai/index.js';
import type { Model } from '../../index.js';
import { thrownMessage } from '../../internal.js';
import type { RunResult } from '../../index.js';
import type { TraceEvent } from '../../index.js';
import { BUNDLED_EXAMPLES, DEFAULT_EXAMPLE, type BundledExample } from './bundled-examples.js';
import { CliError, EXIT_CODES } from './cli-error.js';
import { loadLoopFile } from './load-loop-file.js';
import { closeServers, connectServers, mcpExportEntries, mcpFlagEntries } from './mcp-servers.js';
import { createProgressView } from './progress-view.js';
import { formatRunReport, lastToolHealth } from './run-report.js';

/** A stream the progress view may redraw in place (stderr in the bin). */
export interface ProgressStream {
  write(text: string): unknown;
  isTTY?: boolean;
  columns?: number;
}

/** Where `run` writes and what it reads from its surroundings; tests pass their own. */
export interface RunCommandIo {
  out(text: string): void;
  err(text: string): void;
  /** Raw stderr for the progress view; without it progress goes line by line through `err`. */
  progress?: ProgressStream;
  env?: Readonly<Record<string, string | undefined>>;
  /** The directory relative paths (and the default trace folder) are taken from; defaults to the process's. */
  cwd?: string;
  examples?: Readonly<Record<string, BundledExample>>;
}

export const DEFAULT_TRACE_DIRECTORY = join('.loopstate', 'runs');
const DEFAULT_API_KEY_ENV = 'OPENAI_API_KEY';

export const RUN_USAGE = `Usage: loopstate run <example | path/to/loop.ts|.mts|.js|.mjs> [options]

Runs a loop and prints its result. A loop file's default export is a createLoop result or a loop config,
and it exports \`goal\` (a string). The file is imported to find them: its top level runs (with any side
effects it has) before loopstate can tell whether it exports a loop. TypeScript files run without a build
step (their types are stripped with the typescript package, not checked). Bundled examples run offline:
${Object.keys(BUNDLED_EXAMPLES).join(', ')}.

Options:
  --goal <text>            the goal to run instead of the file's \`goal\` export
  --model openai:<name>    run on a real OpenAI-compatible model instead of the file's own
  --base-url <url>         the server for --model (Ollama, vLLM, llama.cpp, a proxy); default OpenAI's
  --stream                 with --model: stream the reply (the progress view shows it arriving)
  --api-key-env <VAR>      the environment variable holding the API key (default ${DEFAULT_API_KEY_ENV}; with
                           --base-url and the variable unset, no key is sent)
  --mcp "<command line>"   add the tools of a stdio MCP server (repeatable), besides those of the file's
                           \`export const mcp = [target, ...]\`; each server is closed when the run ends
  --record <cassette>      record every model call to a cassette file (JSON) while running
  --replay <cassette>      serve the model's answers from a cassette, offline
  --trace <path>           where to write the JSON lines trace (default: the loop's trace.file, else
                           ${DEFAULT_TRACE_DIRECTORY}/<runId>.jsonl)
  --json                   print {target, model, modelId, traceFile, toolHealth, result} as JSON on stdout
                           (model says how the model ran, modelId is the model's id)
  --quiet                  no live progress (progress goes to stderr, never to stdout)
  -h, --help               show this help

Exit codes:
  0  the run succeeded
  1  the run finished without succeeding (failed or needs_human), or an unexpected error (also when the
     run waits on a promise nothing can settle any more, which is said on stderr)
  2  bad usage: unknown example or option, conflicting options
  3  the loop could not be loaded: no such file, no loop exported, an invalid config, no goal, an MCP
     server that cannot be reached
  4  the model could not be set up: a missing API key, an unreadable cassette`;

const RUN_OPTIONS = {
  goal: { type: 'string' },
  model: { type: 'string' },
  'base-url': { type: 'string' },
  'api-key-env': { type: 'string' },
  stream: { type: 'boolean' },
  record: { type: 'string' },
  mcp: { type: 'string', multiple: true },
  replay: { type: 'string' },
  trace: { type: 'string' },
  json: { type: 'boolean' },
  quiet: { type: 'boolean' },
  help: { type: 'boolean', short: 'h' },
} as const;

type RunFlags = ReturnType<typeof parseRunFlags>['values'];

function parseRunFlags(argv: readonly string[]) {
  try {
    return parseArgs({ args: [...argv], allowPositionals: true, options: RUN_OPTIONS });
  } catch (error) {
    throw new CliError({ kind: 'usage', message: `${thrownMessage(error)}\n\n${RUN_USAGE}` });
  }
}

/**
 * Runs `loopstate run` with its arguments (after `run`) and returns the exit code. `defaultTarget` is
 * what runs without a target (`loopstate example` runs the flagship example).
 * @example
 * process.exitCode = await runCommand(['order-status', '--json'], { out: console.log, err: console.error });
 */
export async function runCommand(argv: readonly string[], io: RunCommandIo, defaultTarget?: string): Promise<number> {
  const json = argv.includes('--json');
  try {
    return await run(argv, io, defaultTarget);
  } catch (error) {
    const exitCode = error instanceof CliError ? error.exitCode : EXIT_CODES.failure;
    const code = error instanceof CliError ? error.code : 'unexpected';
    io.err(`loopstate run: ${thrownMessage(error)}`);
    if (json) io.out(JSON.stringify({ error: { code, message: thrownMessage(error), exitCode } }, null, 2));
    return exitCode;
  }
}

async function run(argv: readonly string[], io: RunCommandIo, defaultTarget: string | undefined): Promise<number> {
  const { values: flags, positionals } = parseRunFlags(argv);
  if (flags.help) {
    io.out(RUN_USAGE);
    return EXIT_CODES.success;
  }
  if (positionals.length > 1)
    throw new CliError({
      kind: 'usage',
      message: `expected one example or loop file, got ${positionals.length}: ${positionals.join(' ')}`,
    });
  const target = positionals[0] ?? defaultTarget;
  if (target === undefined)
    throw new CliError({
      kind: 'usage',
      message: `name an example (${Object.keys(BUNDLED_EXAMPLES).join(', ')}) or a loop file\n\n${RUN_USAGE}`,
    });
  const cwd = io.cwd ?? process.cwd();
  const examples = io.examples ?? BUNDLED_EXAMPLES;
  const example = Object.hasOwn(examples, target) ? examples[target] : undefined;
  const file = isAbsolute(target) ? target : join(cwd, target);
  if (example === undefined && !looksLikePath(target) && !existsSync(file)) {
    throw new CliError({
      kind: 'usage',
      message: `unknown example "${target}"; choose one of: ${Object.keys(examples).join(', ')}, or give the path of a loop file`,
    });
  }
  if (example !== undefined && 'play' in example) return playExample(target, example, flags, io, cwd);
  const loaded = example !== undefined ? await example.load() : await loadLoopFile(target, cwd);
  const goal = flags.goal ?? loaded.goal;
  if (goal === undefined || goal.trim() === '')
    throw new CliError({
      kind: 'loop_file',
      message: `${target} exports no goal; add \`export const goal = '...'\` or pass --goal <text>`,
    });
  const { model, label, baseUrl } = chooseModel(
    flags,
    loaded.config,
    io.env ?? process.env,
    cwd,
    example !== undefined,
  );

  const runId = runIdFor(loaded.config);
  const userTrace = loaded.config.trace === false ? {} : (loaded.config.trace ?? {});
  // --trace, else the file the loop itself names, else one file per run.
  const chosen = flags.trace ?? userTrace.file;
  const traceFile =
    chosen === undefined
      ? join(cwd, DEFAULT_TRACE_DIRECTORY, `${runId}.jsonl`)
      : isAbsolute(chosen)
        ? chosen
        : join(cwd, chosen);
  try {
    mkdirSync(dirname(traceFile), { recursive: true });
  } catch {
    // The trace sink then fails to open and the run says so in a warning; the run itself goes on.
  }
  const view = flags.quiet ? null : createProgressView(progressOptions(io));
  const userOnEvent = userTrace.onEvent;
  const onEvent = (event: TraceEvent) => {
    view?.onEvent(event);
    userOnEvent?.(event);
  };
  const servers = [
    ...mcpExportEntries('mcp' in loaded ? loaded.mcp : undefined, target),
    ...mcpFlagEntries(flags.mcp ?? []),
  ];
  let result: RunResult;
  // Connected last, so a bad flag or model fails before any server starts; closed however the run ends.
  const connections = await connectServers(servers);
  for (const warning of connections.flatMap((connection) => connection.warnings))
    io.err(`loopstate run: warning: ${warning}`);
  try {
    const loop = createLoop({
      ...loaded.config,
      model,
      tools: [...(loaded.config.tools ?? []), ...connections.flatMap((connection) => connection.tools)],
      trace: { ...userTrace, inMemory: true, file: traceFile, onEvent },
    } as LoopConfig);
    result = await loop.run({ goal, runId });
  } catch (error) {
    // An invalid config or run input is the loop file's to fix; anything else is unexpected.
    if (error instanceof LoopConfigError) {
      const traceIssue = error.issues.find((issue) => issue.path === 'trace.file');
      // A trace path given on the command line is the command line's mistake, not the loop file's.
      if (traceIssue !== undefined && flags.trace !== undefined)
        throw new CliError({ kind: 'usage', message: `--trace ${flags.trace}: ${traceIssue.message}`, cause: error });
      throw new CliError({ kind: 'loop_file', message: `${target}: ${thrownMessage(error)}`, cause: error });
    }
    throw error;
  } finally {
    view?.finish();
    await closeServers(connections);
  }
  const written = result.warnings.some((warning) => warning.startsWith('trace.file'))
    ? null
    : displayPath(traceFile, cwd);
  // The limits the run actually had (defaults applied), as its run-start recorded them.
  const start = result.trace.find((event) => event.type === 'run-start');
  const limits = start?.type === 'run-start' ? start.limits : { maxSteps: null, maxCostUsd: null };
  if (flags.json) {
    // `model` says how the model ran, for people; `modelId` is the model's own id, for programs.
    io.out(
      JSON.stringify(
        {
          target,
          model: label,
          modelId: model.id,
          traceFile: written,
          toolHealth: lastToolHealth(result.trace),
          result,
        },
        null,
        2,
      ),
    );
  } else {
    io.out(
      formatRunReport(result, {
        target,
        modelLabel: label,
        traceFile: written,
        maxSteps: limits.maxSteps,
        maxCostUsd: limits.maxCostUsd,
        baseUrl,
      }),
    );
  }
  return result.status === 'succeeded' ? EXIT_CODES.success : EXIT_CODES.failure;
}

const looksLikePath = (target: string) => /[/\\.]/.test(target);

function displayPath(file: string, cwd: string): string {
  const shown = relative(cwd, file);
  return shown.startsWith('..') || isAbsolute(shown) ? file : shown;
}

function runIdFor(config: LoopConfig): string {
  try {
    const id = config.generateRunId?.();
    if (typeof id === 'string' && id !== '') return id;
  } catch {
    // The loop itself reports a broken generateRunId; the CLI only needs a name for the trace file.
  }
  return defaultRunId();
}

function progressOptions(io: RunCommandIo) {
  const stream = io.progress;
  if (stream === undefined)
    return { write: (text: string) => text.trimEnd() !== '' && io.err(text.replace(/\n$/, '')), tty: false };
  // A terminal that reports no width (0 under some pseudo-terminals) gets the renderer's default.
  const columns = stream.columns !== undefined && stream.columns >= 20 ? { columns: stream.columns } : {};
  return { write: (text: string) => void stream.write(text), tty: stream.isTTY === true, ...columns };
}

/** The model to run on, and how to say it: the loop's own, a real one (`--model`), or a cassette. */
function chooseModel(
  flags: RunFlags,
  config: LoopConfig,
  env: Readonly<Record<string, string | undefined>>,
  cwd: string,
  bundled: boolean,
): { model: Model; label: string; baseUrl: string | undefined } {
  const at = (path: string) => (isAbsolute(path) ? path : join(cwd, path));
  if (flags.replay !== undefined) {
    if (flags.model !== undefined || flags.record !== undefined)
      throw new CliError({
        kind: 'usage',
        message: '--replay serves a recorded run; it cannot be combined with --model or --record',
      });
    try {
      return {
        model: replayModel(at(flags.replay), { ...(config.redact ? { redact: config.redact } : {}) }),
        label: `replaying ${flags.replay}`,
        baseUrl: undefined,
      };
    } catch (error) {
      if (error instanceof CassetteFileError)
        throw new CliError({ kind: 'model_setup', message: error.message, cause: error });
      throw error;
    }
  }
  if (flags['base-url'] !== undefined && flags.model === undefined)
    throw new CliError({ kind: 'usage', message: '--base-url needs --model openai:<name>' });
  for (const option of ['api-key-env', 'stream'] as const) {
    if (flags[option] !== undefined && flags.model === undefined)
      throw new CliError({ kind: 'usage', message: `--${option} needs --model openai:<name>` });
  }
  let model = config.model;
  let label = bundled ? `offline, ${model.id} model` : `model ${model.id}`;
  let baseUrl: string | undefined;
  if (flags.model !== undefined) {
    const match = /^openai:(.+)$/.exec(flags.model);
    if (match?.[1] === undefined)
      throw new CliError({
        kind: 'usage',
        message: `--model expects openai:<model name> (e.g. openai:gpt-4.1-mini), got "${flags.model}"`,
      });
    const keyVariable = flags['api-key-env'] ?? DEFAULT_API_KEY_ENV;
    baseUrl = flags['base-url'];
    const apiKey = env[keyVariable];
    if ((apiKey === undefined || apiKey === '') && (baseUrl === undefined || flags['api-key-env'] !== undefined)) {
      throw new CliError({
        kind: 'model_setup',
        message: `the API key variable ${keyVariable} is not set; export ${keyVariable}=<key>${flags['api-key-env'] === undefined ? ' or name another variable with --api-key-env' : ''}`,
      });
    }
    // A local server usually needs no key, but the client insists on one.
    model = openaiModel({
      model: match[1],
      apiKey: apiKey || 'no-key',
      ...(baseUrl === undefined ? {} : { baseURL: baseUrl }),
      ...(flags.stream ? { stream: true } : {}),
    });
    label = `openai:${match[1]}${baseUrl === undefined ? '' : ` at ${baseUrl}`}`;
  }
  if (flags.record !== undefined) {
    model = recordModel(model, at(flags.record), { ...(config.redact ? { redact: config.redact } : {}) });
    label += `, recording to ${flags.record}`;
  }
  return { model, label, baseUrl };
}

/** `loopstate example [name]`: `run` with the flagship example as the default target. */
export const runExampleCommand = (argv: readonly string[], io: RunCommandIo) => runCommand(argv, io, DEFAULT_EXAMPLE);

/**
 * An example that is a story of several runs (stop for approval, then resume from the store): played whole,
 * then reported like a run; its trace (the resumed run's) is written after it and replayed to the progress view.
 */
async function playExample(
  target: string,
  example: Extract<BundledExample, { play: unknown }>,
  flags: RunFlags,
  io: RunCommandIo,
  cwd: string,
): Promise<number> {
  if (
    flags.model !== undefined ||
    flags.replay !== undefined ||
    flags.record !== undefined ||
    flags.goal !== undefined ||
    flags.mcp !== undefined
  ) {
    throw new CliError({
      kind: 'usage',
      message: `the ${target} example plays its own runs offline; --model, --replay, --record, --goal and --mcp do not apply to it`,
    });
  }
  const view = flags.quiet ? null : createProgressView(progressOptions(io));
  const result = await example.play((line) => view !== null && io.err(line));
  for (const event of result.trace) view?.onEvent(event);
  view?.finish();
  const traceFile =
    flags.trace === undefined
      ? join(cwd, DEFAULT_TRACE_DIRECTORY, `${result.runId}.jsonl`)
      : isAbsolute(flags.trace)
        ? flags.trace
        : join(cwd, flags.trace);
  let written: string | null = displayPath(traceFile, cwd);
  try {
    mkdirSync(dirname(traceFile), { recursive: true });
    writeFileSync(traceFile, result.trace.map((event) => `${JSON.stringify(event)}\n`).join(''));
  } catch {
    written = null;
  }
  const start = result.trace.find((event) => event.type === 'run-start');
  const limits = start?.type === 'run-start' ? start.limits : { maxSteps: null, maxCostUsd: null };
  const modelId = start?.type === 'run-start' ? start.modelId : null;
  if (flags.json)
    io.out(
      JSON.stringify(
        {
          target,
          model: 'offline, scripted model',
          modelId,
          traceFile: written,
          toolHealth: lastToolHealth(result.trace),
          result,
        },
        null,
        2,
      ),
    );
  else
    io.out(
      formatRunReport(result, {
        target,
        modelLabel: 'offline, scripted model',
        traceFile: written,
        maxSteps: limits.maxSteps,
        maxCostUsd: limits.maxCostUsd,
      }),
    );
  return result.status === 'succeeded' ? EXIT_CODES.success : EXIT_CODES.failure;
}
