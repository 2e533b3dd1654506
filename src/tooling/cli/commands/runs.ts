/**
 * `loopstate runs <loop file> --store <sqlite file | postgres url> <subcommand>`: the runs of a store,
 * listed and shown, and a person's decisions on them (approve, reject, review, cancel, resume), each
 * through the loop's own `resume` / `cancel`, so the same checks and typed errors apply.
 */
import { parseArgs } from 'node:util';
import type { RunResult, RunStatus } from '../../../index.js';
import {
  durableRunsOf,
  listStoredRuns,
  storedRunOf,
  STORED_RUN_STATUSES,
  thrownMessage,
  type StoredRun,
} from '../../../internal.js';
import { describeActionError, performAction, type RunAction } from '../../console/run-actions.js';
import { openStoredLoop, redactedResult, redactedRun, type StoredLoop } from '../../console/stored-loop.js';
import { CliError, EXIT_CODES } from '../cli-error.js';
import type { CliIo } from '../cli-io.js';
import { terminalLine } from '../terminal-safe.js';

export const RUNS_USAGE = `Usage: loopstate runs <loop file> --store <sqlite file | postgres url> <command> [options]

The runs of a store, and a person's decisions on them. The loop file is the one the runs were started
with: continuing a run needs its tools (a loop with other tools is refused with definition_changed).

Commands:
  list [--status S] [--limit N] [--after <runId>] [--json]
                                       the store's runs in run id order (S: running, needs_human,
                                       succeeded, failed); --after: the page after that run
  show <runId> [--json]                the run's result, what it waits for, and its step table
  approve <runId> <callId>             approve a call waiting for approval; the run continues
  reject <runId> <callId> --reason <text>
                                       reject it: the reason reaches the model; the run continues
  review <runId> --accept | --reject --reason <text> [--review-id <id>]
                                       accept or reject an output waiting for review; --review-id (from
                                       show) binds the decision to the stop shown: another stop is refused
  cancel <runId>                       cancel the run (one another process drives stops at its next commit)
  resume <runId>                       continue a run whose process died
Options:
  --store <s>   a SQLite file a loop's sqliteStore wrote, or a postgres:// URL (required)
  --schema <n>  the Postgres schema of the store (default loopstate)
  --json        print JSON on stdout (list, show, and the decisions' results)
  -h, --help    show this help

Exit codes:
  0  done (a decision: the run continued; what it did next is printed)
  1  the loop refused the decision or command (its error code is printed: approval_already_decided,
     definition_changed, run_busy, ...), or something unexpected went wrong
  2  bad usage: a missing --store or argument, an unknown status, a run not in the store
  3  the loop file could not be loaded`;

const OPTIONS = {
  store: { type: 'string' },
  schema: { type: 'string' },
  status: { type: 'string' },
  limit: { type: 'string' },
  after: { type: 'string' },
  reason: { type: 'string' },
  accept: { type: 'boolean' },
  reject: { type: 'boolean' },
  'review-id': { type: 'string' },
  json: { type: 'boolean' },
  help: { type: 'boolean', short: 'h' },
} as const;

const usageError = (message: string) => new CliError({ kind: 'usage', message: `${message}\n\n${RUNS_USAGE}` });

type Flags = ReturnType<typeof parse>['values'];

function parse(argv: readonly string[]) {
  try {
    return parseArgs({ args: [...argv], allowPositionals: true, options: OPTIONS });
  } catch (error) {
    throw usageError(thrownMessage(error));
  }
}

/**
 * Runs `loopstate runs` with its arguments (after `runs`) and returns the exit code.
 * @example
 * process.exitCode = await runsCommand(['loop.ts', '--store', 'loops.db', 'list'], { out: console.log, err: console.error });
 */
export async function runsCommand(argv: readonly string[], io: CliIo): Promise<number> {
  const json = argv.includes('--json');
  try {
    return await runs(argv, io);
  } catch (error) {
    const exitCode = error instanceof CliError ? error.exitCode : EXIT_CODES.failure;
    const { code, message } = describeActionError(error);
    io.err(`loopstate runs: ${code === 'unexpected' || error instanceof CliError ? '' : `${code}: `}${message}`);
    if (json) io.out(JSON.stringify({ error: { code, message, exitCode } }, null, 2));
    return exitCode;
  }
}

async function runs(argv: readonly string[], io: CliIo): Promise<number> {
  const { values: flags, positionals } = parse(argv);
  if (flags.help) {
    io.out(RUNS_USAGE);
    return EXIT_CODES.success;
  }
  const [loopFile, command, ...rest] = positionals;
  if (loopFile === undefined) throw usageError('<loop file>: expected the loop file the runs were started with');
  if (flags.store === undefined) throw usageError('--store: expected a SQLite file path or a postgres:// URL');
  if (command === undefined)
    throw usageError('<command>: expected list, show, approve, reject, review, cancel or resume');
  const action = command === 'list' ? null : command === 'show' ? null : actionOf(command, rest, flags);
  if (command === 'list' || command === 'show') checkArity(command, rest, command === 'list' ? 0 : 1);
  const listOptions = command === 'list' ? listOptionsOf(flags) : null;
  const stored = await openStoredLoop({
    loopFile,
    store: flags.store,
    ...(flags.schema === undefined ? {} : { schema: flags.schema }),
    // Listing and showing read the store only: the file's MCP servers are started for a decision alone.
    connectMcp: action !== null,
    ...(io.cwd === undefined ? {} : { cwd: io.cwd }),
  });
  try {
    if (listOptions !== null) return await list(stored, listOptions, flags, io);
    if (command === 'show') return await show(stored, rest[0]!, flags, io);
    await mustExist(stored, action!.runId);
    const result = await performAction(stored.loop, action!);
    // What the run did next is printed through the loop's redaction, as JSON and as text.
    report(result === null ? null : redactedResult(stored, result), action!, flags, io);
    return EXIT_CODES.success;
  } finally {
    await stored.close();
  }
}

/** What a command's positional arguments are, in order: `show <runId>`, `approve <runId> <callId>`. */
const ARGUMENT_NAMES = ['<runId>', '<callId>'];

function checkArity(command: string, rest: readonly string[], count: number): void {
  // The missing ones are named: `approve r1` lacks the call id, not the run id.
  if (rest.length < count)
    throw usageError(`${command}: expected ${ARGUMENT_NAMES.slice(rest.length, count).join(' ')}`);
  if (rest.length > count) throw usageError(`${command}: unexpected argument ${JSON.stringify(rest[count])}`);
}

/** The decision or command the arguments name, checked before anything is opened. */
function actionOf(command: string, rest: readonly string[], flags: Flags): RunAction {
  const reason = flags.reason;
  const needsReason = (what: string) => {
    if (reason === undefined || reason.trim() === '')
      throw usageError(`--reason: ${what} needs a reason (it is what the model reads)`);
    return reason;
  };
  const noReason = (what: string) => {
    if (reason !== undefined)
      throw usageError(`--reason: ${what} takes no reason (only a rejection carries one to the model)`);
  };
  switch (command) {
    case 'approve':
      checkArity('approve', rest, 2);
      noReason('an approval');
      return { kind: 'approve', runId: rest[0]!, callId: rest[1]! };
    case 'reject':
      checkArity('reject', rest, 2);
      return { kind: 'reject', runId: rest[0]!, callId: rest[1]!, reason: needsReason('a rejection') };
    case 'review': {
      checkArity('review', rest, 1);
      if (flags.accept === flags.reject) throw usageError('review: expected exactly one of --accept and --reject');
      const reviewId = flags['review-id'];
      if (reviewId !== undefined && !/^\d+-[0-9a-f]{16}$/.test(reviewId))
        throw usageError(
          `--review-id: expected the id \`runs show\` prints (like 7-3f2a9c01b4d5e6f7), got ${JSON.stringify(reviewId)}`,
        );
      // Bound to the stop the person was shown; unbound, a repeat of the last decision is a retry, never applied anew.
      const bound = reviewId === undefined ? {} : { reviewId };
      if (flags.accept) {
        noReason('an acceptance');
        return { kind: 'review', runId: rest[0]!, accept: true, ...bound };
      }
      return { kind: 'review', runId: rest[0]!, accept: false, reason: needsReason('a rejected review'), ...bound };
    }
    case 'cancel':
    case 'resume':
      checkArity(command, rest, 1);
      noReason(`${command}`);
      return { kind: command, runId: rest[0]! };
    default:
      throw usageError(
        `<command>: unknown command ${JSON.stringify(command)}; expected list, show, approve, reject, review, cancel or resume`,
      );
  }
}

function listOptionsOf(flags: Flags): { status?: RunStatus; limit: number; after?: string } {
  const status = flags.status;
  if (status !== undefined && !(STORED_RUN_STATUSES as readonly string[]).includes(status))
    throw usageError(`--status: expected one of ${STORED_RUN_STATUSES.join(', ')}, got ${JSON.stringify(status)}`);
  const limit = flags.limit === undefined ? 50 : Number(flags.limit);
  if (!Number.isInteger(limit) || limit < 1 || limit > 10_000)
    throw usageError(`--limit: expected a whole number from 1 to 10000, got ${JSON.stringify(flags.limit)}`);
  return {
    limit,
    ...(status === undefined ? {} : { status: status as RunStatus }),
    ...(flags.after === undefined ? {} : { after: flags.after }),
  };
}

/** A run the store does not have is the caller's mistake (exit 2), said before the loop is asked. */
async function mustExist(stored: StoredLoop, runId: string): Promise<StoredRun> {
  const row = await stored.store.readRun(runId);
  if (row === null) throw usageError(`<runId>: no run ${JSON.stringify(runId)} in the store ${stored.storeLabel}`);
  return storedRunOf({ ...row, finishedAt: null });
}

async function list(
  stored: StoredLoop,
  options: ReturnType<typeof listOptionsOf>,
  flags: Flags,
  io: CliIo,
): Promise<number> {
  const listed = await listStoredRuns(stored.store, options);
  // Everything printed goes through the loop's redaction: goals, details and waiting arguments and outputs.
  const page = { ...listed, runs: listed.runs.map((run) => redactedRun(stored, run)) };
  if (flags.json) {
    io.out(JSON.stringify(page, null, 2));
    return EXIT_CODES.success;
  }
  if (page.runs.length === 0 && page.unreadable.length === 0)
    io.out(`no ${options.status === undefined ? '' : `${options.status} `}runs in ${terminalLine(stored.storeLabel)}`);
  for (const run of page.runs) {
    const waiting = [
      ...run.pendingApprovals.map((call) => `approve ${call.callId} (${call.tool})`),
      ...(run.pendingReview === null ? [] : [`review (${run.pendingReview.evaluator})`]),
    ];
    io.out(
      [
        terminalLine(run.runId),
        run.status,
        run.stopReason === null ? '' : terminalLine(run.stopReason),
        run.finishedAt === null ? '' : new Date(run.finishedAt).toISOString(),
        waiting.length === 0 ? '' : `waiting: ${terminalLine(waiting.join(', '))}`,
        run.goal === null ? '' : `“${terminalLine(run.goal.length > 60 ? `${run.goal.slice(0, 59)}…` : run.goal)}”`,
      ]
        .filter((part) => part !== '')
        .join('  '),
    );
  }
  for (const run of page.unreadable)
    io.err(`loopstate runs: run ${terminalLine(run.runId)} cannot be read: ${terminalLine(run.problem)}`);
  if (page.next !== null) io.out(`more: loopstate runs … list --after ${terminalLine(page.next)}`);
  return EXIT_CODES.success;
}

async function show(stored: StoredLoop, runId: string, flags: Flags, io: CliIo): Promise<number> {
  // Everything printed goes through the loop's redaction: the run, its result (messages, tool arguments,
  // raw output) and its step table.
  const run = redactedRun(stored, await mustExist(stored, runId));
  const stepsResult = (await durableRunsOf(stored.loop)?.latestResult(runId)) ?? null;
  const { storedRunTimeline } = await import('../../viewer/stored-run-view.js');
  const steps =
    stepsResult === null
      ? []
      : (stored.redact(storedRunTimeline(runId, stepsResult.trace, stored.storeLabel).steps) as ReturnType<
          typeof storedRunTimeline
        >['steps']);
  let result: (Omit<RunResult, 'trace'> & { traceEvents: number }) | null = null;
  if (stepsResult !== null) {
    const { trace, ...withoutTrace } = stepsResult;
    result = redactedResult(stored, { ...withoutTrace, traceEvents: trace.length });
  }
  if (flags.json) {
    io.out(
      JSON.stringify(
        {
          run,
          result,
          steps,
        },
        null,
        2,
      ),
    );
    return EXIT_CODES.success;
  }
  const lines = [
    `run ${terminalLine(run.runId)}: ${run.status}${run.stopReason === null ? '' : ` (${run.stopReason})`}`,
  ];
  if (run.detail !== null) lines.push(`  ${terminalLine(run.detail)}`);
  if (run.goal !== null) lines.push(`goal: ${terminalLine(run.goal)}`);
  if (result !== null)
    lines.push(
      `steps ${result.steps} · tokens ${result.usage.inputTokens} in / ${result.usage.outputTokens} out · $${result.usage.costUsd.toFixed(4)}`,
    );
  if (result?.rawOutput != null) lines.push(`output: ${terminalLine(String(result.rawOutput))}`);
  for (const call of run.pendingApprovals)
    lines.push(
      `waiting for approval: ${terminalLine(call.callId)} ${terminalLine(call.tool)} ${terminalLine(JSON.stringify(call.args))}`,
    );
  if (run.pendingReview !== null)
    lines.push(
      `waiting for review (${terminalLine(run.pendingReview.evaluator)}: ${terminalLine(run.pendingReview.reason)}): ${terminalLine(String(run.pendingReview.rawOutput))}`,
    );
  if (run.pendingReview !== null)
    lines.push(`review id: ${terminalLine(run.pendingReview.reviewId)} (decide this very stop with --review-id)`);
  if (steps.length > 0) {
    lines.push('', 'step  task  state after  decision  tool calls  tokens in/out  verdict');
    for (const row of steps)
      lines.push(
        [
          String(row.step).padStart(4),
          terminalLine(row.taskId),
          terminalLine(row.stateAfter ?? '—'),
          terminalLine(row.decision),
          row.toolCalls.length === 0
            ? '—'
            : terminalLine(
                row.toolCalls
                  .map((call) => `${call.name} ${call.argumentsSummary} → ${call.status ?? 'not run'}`)
                  .join('; '),
              ),
          `${row.inputTokens}/${row.outputTokens}`,
          row.verdict === null ? '—' : row.verdict.passed ? 'passed' : `rejected: ${terminalLine(row.verdict.reason)}`,
        ].join('  '),
      );
  } else if (result === null)
    lines.push('(still running, or its process died: no result recorded yet; resume continues it)');
  io.out(lines.join('\n'));
  return EXIT_CODES.success;
}

function report(result: RunResult | null, action: RunAction, flags: Flags, io: CliIo): void {
  if (flags.json) {
    io.out(JSON.stringify({ action: action.kind, runId: action.runId, result }, null, 2));
    return;
  }
  if (result === null) {
    io.out(`run ${terminalLine(action.runId)}: cancel requested; the process driving it stops it at its next commit`);
    return;
  }
  const waiting = result.pendingApprovals.map((call) => `${call.callId} (${call.tool})`);
  // A review decision without --review-id that repeats the last one taken is a retry and changes nothing:
  // when the run waits for review again, say which stop so the person can decide that one on purpose.
  const review = result.pendingReview;
  const reviewHint =
    action.kind === 'review' && review !== null && review.reviewId !== null && action.reviewId !== review.reviewId
      ? `\nwaiting for review ${terminalLine(review.reviewId)} (${terminalLine(review.reason)}); a decision meant for it needs --review-id ${terminalLine(review.reviewId)}`
      : '';
  io.out(
    `run ${terminalLine(result.runId)}: ${result.status} (${result.stopReason}) — ${terminalLine(result.detail)}${waiting.length === 0 ? '' : `\nwaiting for approval: ${terminalLine(waiting.join(', '))}`}${reviewHint}`,
  );
}
