/**
 * The loop of a loop file bound to the store named by `--store` (a SQLite file or a Postgres URL), for
 * `loopstate runs` and `loopstate console`: continuing a stored run needs the tools it was started with,
 * so the loop comes from the file and only its store is replaced.
 */
import { existsSync, statSync } from 'node:fs';
import { isAbsolute, join } from 'node:path';
import { createLoop, LoopConfigError, type Loop, type LoopConfig, type RunResult, type Store } from '../../index.js';
import { durableRunsOf, loopConfigOf, thrownMessage, type StoredRun } from '../../internal.js';
import { postgresStore } from '../../adapters/postgres/index.js';
import { sqliteStore } from '../../adapters/sqlite/index.js';
import { CliError } from '../cli/cli-error.js';
import { loadLoopFile } from '../cli/load-loop-file.js';
import { closeServers, connectServers, mcpExportEntries } from '../cli/mcp-servers.js';

/**
 * A loop file's loop on the `--store` store.
 * @example
 * const stored = await openStoredLoop({ loopFile: 'refund-loop.ts', store: 'loops.db' });
 * try { console.log(await stored.loop.resume('run-1')) } finally { await stored.close() }
 */
export interface StoredLoop {
  loop: Loop;
  store: Store;
  /** What `--store` named, for messages (a Postgres URL without its password). */
  storeLabel: string;
  /** A value with the loop's redaction applied (secret-named keys and secret-looking strings), for a person to see. */
  redact: (value: unknown) => unknown;
  /** Checks decisions as `loop.resume` would, without changing anything (typed errors); `retried`: taken already. */
  checkDecisions(runId: string, approvals: unknown): Promise<{ retried: boolean }>;
  /** Checks a review decision as `loop.resume` would, without changing anything; `retried`: taken already. */
  checkReview(runId: string, review: unknown): Promise<{ retried: boolean }>;
  close(): Promise<void>;
}

/** Secret-named keys replaced at any depth, then every string through the text rules; a string is text itself. */
function redactValue(redactor: NonNullable<ReturnType<typeof loopConfigOf>>['redact'], value: unknown): unknown {
  if (typeof value === 'string') return redactor.text(value);
  const rendered = redactor.render(value ?? null);
  try {
    return redactor.strings(JSON.parse(rendered) as unknown);
  } catch {
    // Not JSON (a value a record cannot hold in the first place): shown as redacted text.
    return redactor.text(rendered);
  }
}

/**
 * A stored run as a person may see it: the whole of it through the loop's redaction (its goal, detail,
 * the arguments of calls waiting for approval, an output waiting for review), its ids kept as they are
 * (they are what a decision names).
 * @example
 * io.out(JSON.stringify(redactedRun(stored, run)));
 */
export function redactedRun(stored: Pick<StoredLoop, 'redact'>, run: StoredRun): StoredRun {
  const shown = stored.redact(run) as StoredRun;
  return {
    ...shown,
    runId: run.runId,
    pendingApprovals: shown.pendingApprovals.map((call, index) => ({
      ...call,
      callId: run.pendingApprovals[index]!.callId,
    })),
  };
}

/**
 * A run's result as a person may see it: the whole of it (messages, tool arguments, raw output, what it
 * waits for, its trace) through the loop's redaction, its ids kept as they are.
 * @example
 * io.out(JSON.stringify(redactedResult(stored, await loop.resume(runId))));
 */
export function redactedResult<T extends Pick<RunResult, 'runId' | 'pendingApprovals'>>(
  stored: Pick<StoredLoop, 'redact'>,
  result: T,
): T {
  const shown = stored.redact(result) as T;
  return {
    ...shown,
    runId: result.runId,
    pendingApprovals: shown.pendingApprovals.map((call, index) => ({
      ...call,
      callId: result.pendingApprovals[index]!.callId,
    })),
  };
}

const POSTGRES_URL = /^postgres(ql)?:\/\//i;

/** A Postgres URL as it may be printed: the password left out. */
function labelOf(spec: string): string {
  if (!POSTGRES_URL.test(spec)) return spec;
  try {
    const url = new URL(spec);
    if (url.password !== '') url.password = '***';
    return url.toString();
  } catch {
    return 'a postgres URL';
  }
}

/**
 * The store `--store` names: a `postgres://` (or `postgresql://`) URL, in the Postgres schema `schema`
 * names (default `loopstate`), else an existing SQLite file (never created here: a mistyped path would
 * list nothing and say nothing).
 * @example
 * const store = openStore('postgres://app@db/loops', process.cwd(), 'ops');
 */
export function openStore(spec: string | undefined, cwd: string, schema?: string): Store {
  if (spec === undefined || spec.trim() === '')
    throw new CliError({
      kind: 'usage',
      message: '--store: expected the store of the runs: a SQLite file path or a postgres:// URL',
    });
  if (POSTGRES_URL.test(spec)) {
    try {
      return postgresStore({ connectionString: spec, ...(schema === undefined ? {} : { schema }) });
    } catch (error) {
      if (error instanceof LoopConfigError && schema !== undefined)
        throw new CliError({
          kind: 'usage',
          message: `--schema: expected a lower-case Postgres identifier (a-z, 0-9, _), got ${JSON.stringify(schema)}`,
          cause: error,
        });
      throw error;
    }
  }
  if (schema !== undefined)
    throw new CliError({
      kind: 'usage',
      message: '--schema: only for a Postgres store (a postgres:// URL in --store); a SQLite file has no schemas',
    });
  const path = isAbsolute(spec) ? spec : join(cwd, spec);
  if (!existsSync(path) || !statSync(path).isFile())
    throw new CliError({
      kind: 'usage',
      message: `--store: no such SQLite file: ${spec} (expected the database a loop's sqliteStore wrote, or a postgres:// URL)`,
    });
  return sqliteStore({ path });
}

/**
 * Loads the loop file and rebuilds its loop on the `--store` store (its trace kept in memory, so a run
 * continued from here can be viewed); a file that cannot be loaded is a `CliError` of kind `loop_file`.
 * @example
 * const { loop, close } = await openStoredLoop({ loopFile: 'loop.ts', store: 'postgres://app@db/loops' });
 */
export async function openStoredLoop(options: {
  loopFile: string | undefined;
  store: string | undefined;
  /** The Postgres schema of a postgres:// store (default `loopstate`); refused for a SQLite file. */
  schema?: string;
  cwd?: string;
  /** Connect the MCP servers the file exports (`export const mcp`), whose tools a continued run needs (default true). */
  connectMcp?: boolean;
}): Promise<StoredLoop> {
  const cwd = options.cwd ?? process.cwd();
  if (options.loopFile === undefined)
    throw new CliError({
      kind: 'usage',
      message: '<loop file>: expected the loop file the runs were started with (its tools continue them)',
    });
  const store = openStore(options.store, cwd, options.schema);
  let connections: Awaited<ReturnType<typeof connectServers>> = [];
  try {
    const loaded = await loadLoopFile(options.loopFile, cwd);
    const trace = loaded.config.trace === false ? {} : (loaded.config.trace ?? {});
    // The MCP tools are part of the run's definition: without them a continued run is refused (definition_changed).
    if (options.connectMcp !== false)
      connections = await connectServers(mcpExportEntries('mcp' in loaded ? loaded.mcp : undefined, options.loopFile));
    let loop: Loop;
    try {
      loop = createLoop({
        ...loaded.config,
        tools: [...(loaded.config.tools ?? []), ...connections.flatMap((connection) => connection.tools)],
        store,
        trace: { ...trace, inMemory: true },
      } as LoopConfig);
    } catch (error) {
      if (error instanceof LoopConfigError)
        throw new CliError({
          kind: 'loop_file',
          message: `${options.loopFile}: ${thrownMessage(error)}`,
          cause: error,
        });
      throw error;
    }
    const resolved = loopConfigOf(loop)!;
    const durable = durableRunsOf(loop)!;
    return {
      loop,
      store,
      storeLabel: `${labelOf(options.store!)}${options.schema === undefined ? '' : ` (schema ${options.schema})`}`,
      redact: (value) => redactValue(resolved.redact, value),
      checkDecisions: async (runId, approvals) => ({
        retried: (await durable.checkDecisions(runId, approvals)).retried,
      }),
      checkReview: async (runId, review) => ({
        retried: (await durable.checkReviewDecision(runId, review)).retried,
      }),
      close: async () => {
        await closeServers(connections);
        await store.close();
      },
    };
  } catch (error) {
    await closeServers(connections);
    await store.close().catch(() => undefined);
    throw error;
  }
}
