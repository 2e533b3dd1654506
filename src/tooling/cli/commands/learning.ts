/**
 * `loopstate learning show|reset --store <sqlite file | postgres url> [--name <loop>] [--tenant <id>] [--json]`:
 * shows what loops learned across runs (tool weights, failure streaks, task pass rates and failure
 * reasons), or clears it. Figures are shown as stored, at the record's `updated` time: a run fades
 * them by its loop's half-life when it reads them.
 */
import { existsSync } from 'node:fs';
import { parseArgs } from 'node:util';
import type { Store } from '../../../index.js';
import {
  decodeLearningRecord,
  emptyLearningRecord,
  encodeLearningRecord,
  taskFeedbackOf,
  thrownMessage,
  type LearningRecord,
} from '../../../internal.js';
import { sqliteStore } from '../../../adapters/sqlite/index.js';
import { postgresStore } from '../../../adapters/postgres/index.js';
import { EXIT_CODES } from '../cli-error.js';
import type { CliIo } from '../cli-io.js';
import { terminalLine } from '../terminal-safe.js';

export const LEARNING_USAGE = `Usage: loopstate learning show|reset --store <sqlite file | postgres url> [options]

Shows or clears what loops with \`learning\` learned across runs: per tool its weight (how \`toolOrder:
'success_rate'\` ranks it), counts and failure streak; per task its pass rate and most frequent failure
reasons. Counts are shown as stored at the record's update time (runs fade them by the loop's halfLifeMs).

Commands:
  show                 list the learned records (every loop, or those --name and --tenant select)
  reset                clear the selected records; needs --name, or --all for every record

Options:
  --store <where>      a SQLite file (it must exist) or a postgres:// / postgresql:// URL
  --schema <name>      the Postgres schema of the store (default loopstate)
  --name <loop>        only this loop (its \`name\`)
  --tenant <id>        only this tenant's record (with --name); without it, every tenant's and the untenanted one
  --all                with reset: every record in the store
  --json               print JSON (show: one array; reset: the keys cleared, as "deleted")
  -h, --help           show this help

Exit codes: 0 done; 1 a record could not be read (show) or the store failed; 2 bad usage (a missing
SQLite file too).`;

interface Selected {
  key: string;
  name: string;
  tenantId: string | null;
  version: number;
  record: LearningRecord | null;
  problem: string | null;
}

/** Compare-and-set attempts to clear a record that runs keep writing. */
const CLEAR_ATTEMPTS = 50;

/** A record with nothing in it: what `reset` leaves, shown and reset as nothing learned. */
const isCleared = (entry: Selected): boolean =>
  entry.record !== null && Object.keys(entry.record.tools).length === 0 && Object.keys(entry.record.tasks).length === 0;

/**
 * Clears a record by writing an empty one over it (compare-and-set), not by deleting it: its version goes
 * on counting, so a run's batch under way, read before the reset, fails its compare-and-set and is merged
 * into the empty record instead of writing the old one back (a deleted record's version would start at 1
 * again). A key no loop writes is deleted. False when there was nothing to clear.
 */
async function clearRecord(store: Store, entry: Selected): Promise<boolean> {
  const parts = partsOf(entry.key);
  if (parts === null) return store.deleteLearning(entry.key);
  const body = encodeLearningRecord(emptyLearningRecord(parts.name, parts.tenantId, 0));
  let version: number | null = entry.version;
  for (let attempt = 0; attempt < CLEAR_ATTEMPTS; attempt++) {
    if (await store.writeLearning(entry.key, body, version)) return true;
    version = (await store.readLearning(entry.key))?.version ?? null;
  }
  throw new Error(`the learning record ${entry.key} kept changing under ${CLEAR_ATTEMPTS} attempts to clear it`);
}

/** The loop name and tenant a key holds; null for a key loopstate did not write. */
function partsOf(key: string): { name: string; tenantId: string | null } | null {
  try {
    const parts = JSON.parse(key) as unknown;
    if (
      Array.isArray(parts) &&
      parts.length === 2 &&
      typeof parts[0] === 'string' &&
      (parts[1] === null || typeof parts[1] === 'string')
    )
      return { name: parts[0], tenantId: parts[1] as string | null };
  } catch {
    // not one of ours
  }
  return null;
}

function openStore(where: string, schema: string | undefined): Store | string {
  if (/^postgres(?:ql)?:\/\//.test(where))
    return postgresStore({ connectionString: where, ...(schema === undefined ? {} : { schema }) });
  if (schema !== undefined) return '--schema: only for a Postgres store';
  // Opening a SQLite store creates the file: a mistyped path must not leave an empty database behind.
  if (!existsSync(where)) return `--store: no such SQLite file: ${where}`;
  return sqliteStore({ path: where });
}

const fixed = (value: number, digits = 2) => (Number.isInteger(value) ? String(value) : value.toFixed(digits));

function table(rows: string[][]): string[] {
  const widths = rows[0]?.map((_, column) => Math.max(...rows.map((row) => row[column]?.length ?? 0))) ?? [];
  return rows.map((row) => `    ${row.map((cell, column) => cell.padEnd(widths[column] ?? 0)).join('  ')}`.trimEnd());
}

/** A stored record for the terminal: every stored text (names, failure reasons that may quote model output) on one line. */
function describeRecord(entry: Selected): string {
  const title = terminalLine(`${entry.name}${entry.tenantId === null ? '' : ` (tenant ${entry.tenantId})`}`);
  if (entry.record === null)
    return `${title}: version ${entry.version}, unreadable: ${terminalLine(entry.problem ?? '')}`;
  const { record } = entry;
  const lines = [`${title}: version ${entry.version}, updated ${new Date(record.updatedAt).toISOString()}`];
  const tools = Object.entries(record.tools);
  if (tools.length > 0)
    lines.push(
      '  tools',
      ...table([
        ['name', 'weight', 'successes', 'failures', 'streak', 'mean latency'],
        ...tools.map(([name, tool]) => {
          const calls = tool.successes + tool.failures;
          return [
            terminalLine(name),
            tool.weight.toFixed(3),
            fixed(tool.successes),
            fixed(tool.failures),
            String(tool.consecutiveFailures),
            calls > 0 ? `${Math.round(tool.totalLatencyMs / calls)} ms` : '-',
          ];
        }),
      ]),
    );
  const tasks = Object.entries(record.tasks);
  if (tasks.length > 0)
    lines.push(
      '  tasks',
      ...table([
        ['id', 'pass rate', 'evaluations', 'frequent failure reasons'],
        ...tasks.map(([id, task]) => {
          const feedback = taskFeedbackOf(task, 3);
          return [
            terminalLine(id),
            feedback.passRate.toFixed(3),
            fixed(feedback.evaluations),
            terminalLine(
              feedback.topFailureReasons.map(({ reason, count }) => `${reason} (${fixed(count)})`).join('; '),
            ) || '-',
          ];
        }),
      ]),
    );
  if (tools.length === 0 && tasks.length === 0) lines.push('  (nothing learned yet)');
  return lines.join('\n');
}

/**
 * Runs `loopstate learning …` and resolves with the exit code.
 * @example
 * const exit = await learningCommand(['show', '--store', 'loops.db', '--name', 'support-bot'], io);
 */
export async function learningCommand(argv: readonly string[], io: CliIo): Promise<number> {
  let parsed;
  try {
    parsed = parseArgs({
      args: [...argv],
      allowPositionals: true,
      options: {
        store: { type: 'string' },
        schema: { type: 'string' },
        name: { type: 'string' },
        tenant: { type: 'string' },
        all: { type: 'boolean' },
        json: { type: 'boolean' },
        help: { type: 'boolean', short: 'h' },
      },
    });
  } catch (error) {
    io.err(`loopstate learning: ${thrownMessage(error)}\n\n${LEARNING_USAGE}`);
    return EXIT_CODES.usage;
  }
  const { values, positionals } = parsed;
  if (values.help) {
    io.out(LEARNING_USAGE);
    return EXIT_CODES.success;
  }
  const [action, ...extra] = positionals;
  const problem =
    action !== 'show' && action !== 'reset'
      ? `expected show or reset, got ${action === undefined ? 'nothing' : `"${action}"`}`
      : extra.length > 0
        ? `unexpected argument "${extra[0]}"`
        : values.store === undefined || values.store === ''
          ? '--store: expected a SQLite file or a postgres:// URL'
          : values.tenant !== undefined && values.name === undefined
            ? '--tenant: needs --name (the loop whose tenant it is)'
            : action === 'reset' && values.name === undefined && values.all !== true
              ? 'reset needs --name <loop> (or --all to clear every record)'
              : values.all === true && (action !== 'reset' || values.name !== undefined)
                ? '--all: only with reset, and not with --name'
                : null;
  if (problem !== null) {
    io.err(`loopstate learning: ${problem}\n\n${LEARNING_USAGE}`);
    return EXIT_CODES.usage;
  }
  const store = openStore(values.store as string, values.schema);
  if (typeof store === 'string') {
    // A missing SQLite file is the caller's mistake, as for `loopstate runs`: exit 2.
    io.err(`loopstate learning: ${terminalLine(store)}`);
    return EXIT_CODES.usage;
  }
  try {
    const rows = await store.listLearning();
    const selected: Selected[] = [];
    for (const row of rows) {
      const parts = partsOf(row.key);
      if (values.name !== undefined && parts?.name !== values.name) continue;
      if (values.tenant !== undefined && parts?.tenantId !== values.tenant) continue;
      let record: LearningRecord | null = null;
      let unreadable: string | null = null;
      try {
        record = decodeLearningRecord(row.body, row.key);
      } catch (error) {
        unreadable = thrownMessage(error);
      }
      selected.push({
        key: row.key,
        name: parts?.name ?? row.key,
        tenantId: parts?.tenantId ?? null,
        version: row.version,
        record,
        problem: unreadable,
      });
    }
    if (action === 'reset') {
      const deleted: string[] = [];
      for (const entry of selected) if (!isCleared(entry) && (await clearRecord(store, entry))) deleted.push(entry.key);
      if (values.json) io.out(JSON.stringify({ deleted }));
      else
        io.out(
          deleted.length === 0
            ? 'nothing learned to reset'
            : `reset ${deleted.length} learning record${deleted.length === 1 ? '' : 's'}: ${selected
                .filter((entry) => deleted.includes(entry.key))
                .map((entry) =>
                  terminalLine(`${entry.name}${entry.tenantId === null ? '' : ` (tenant ${entry.tenantId})`}`),
                )
                .join(', ')}`,
        );
      return EXIT_CODES.success;
    }
    // A cleared record is nothing learned.
    const shown = selected.filter((entry) => !isCleared(entry));
    if (values.json) io.out(JSON.stringify(shown, null, 2));
    else if (shown.length === 0)
      io.out(
        values.name === undefined
          ? 'nothing learned yet in this store'
          : `nothing learned yet for ${terminalLine(values.name)}${values.tenant === undefined ? '' : ` (tenant ${terminalLine(values.tenant)})`}`,
      );
    else io.out(shown.map(describeRecord).join('\n\n'));
    return shown.some((entry) => entry.record === null) ? EXIT_CODES.failure : EXIT_CODES.success;
  } catch (error) {
    io.err(`loopstate learning: the store failed: ${terminalLine(thrownMessage(error))}`);
    return EXIT_CODES.failure;
  } finally {
    await store.close().catch(() => undefined);
  }
}
