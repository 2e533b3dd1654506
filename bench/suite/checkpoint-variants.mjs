/**
 * The variants `checkpoint-cost.mjs` compares: loopstate with no store, `memoryStore()`, `sqliteStore`
 * (NORMAL and `durability: 'full'`) and, given a Postgres, `postgresStore`; LangGraph's suite graph
 * with no checkpointer, `MemorySaver` and `SqliteSaver` (as shipped, and with synchronous=FULL).
 *
 * A variant opens a fresh instance per round (a new store or saver, a new file, a new loop or compiled
 * graph: untimed), whose `run` does one timed run and checks it did the work, and whose `account` (untimed,
 * after the round) reads back what the round's runs left persisted.
 */
import { existsSync, rmSync, statSync } from 'node:fs';
import path from 'node:path';
import { MemorySaver } from '@langchain/langgraph';
import { SqliteSaver } from '@langchain/langgraph-checkpoint-sqlite';
import Database from 'better-sqlite3';
import { checkLoopResult, createBenchLoop, LOOPSTATE_ENTRY } from './adapters/loopstate.mjs';
import { createGraph, invokeGraph } from './adapters/langgraph.mjs';
import { checkAnswer, checkCounts, resetCounters } from './workload.mjs';

const loopstate = await import(LOOPSTATE_ENTRY.href);
const { sqliteStore } = await import(new URL('sqlite/index.js', new URL('./adapters/', LOOPSTATE_ENTRY)).href);
const { postgresStore } = await import(new URL('postgres/index.js', new URL('./adapters/', LOOPSTATE_ENTRY)).href);

// Run and thread ids of one length for both frameworks (a loopstate record carries its run id), unique in the process.
let runCounter = 0;
const nextRunId = () => `run-${String(++runCounter).padStart(6, '0')}`;

/** Size of a SQLite database as persisted: the file plus its WAL after a TRUNCATE checkpoint (the -shm index is not data). */
function sqliteFileBytes(file) {
  const db = new Database(file);
  db.pragma('wal_checkpoint(TRUNCATE)');
  db.close();
  const wal = `${file}-wal`;
  return statSync(file).size + (existsSync(wal) ? statSync(wal).size : 0);
}

function removeSqlite(file) {
  for (const suffix of ['', '-wal', '-shm']) rmSync(`${file}${suffix}`, { force: true });
}

/**
 * The store as given, counting what the journal hands it: rows per kind, appends (one transaction each),
 * snapshots written, and the characters of their bodies (the bodies are ASCII JSON here, so characters
 * are bytes; `account` checks that against the bytes read back).
 */
function countingStore(store) {
  const tally = { rows: {}, appends: 0, journalChars: 0, snapshots: 0, snapshotChars: 0 };
  const counted = {
    ...store,
    async append(runId, rows, lease, runBody) {
      tally.appends += 1;
      for (const row of rows) {
        tally.rows[row.kind] = (tally.rows[row.kind] ?? 0) + 1;
        tally.journalChars += row.body.length;
      }
      return store.append(runId, rows, lease, runBody);
    },
    async writeSnapshot(runId, row, lease) {
      tally.snapshots += 1;
      tally.snapshotChars += row.body.length;
      return store.writeSnapshot(runId, row, lease);
    },
  };
  const reset = () => Object.assign(tally, { rows: {}, appends: 0, journalChars: 0, snapshots: 0, snapshotChars: 0 });
  return { store: counted, tally, reset };
}

/** One call to the model per step and one tool call per step but the last: each is a durable step with its own records. */
function checkJournalRecords(tally, steps, where) {
  const { rows } = tally;
  const problems = [];
  if (rows.model !== steps) problems.push(`${rows.model ?? 0} model records (expected ${steps})`);
  if (rows.intent !== steps - 1) problems.push(`${rows.intent ?? 0} intent records (expected ${steps - 1})`);
  if (rows['tool-result'] !== steps - 1)
    problems.push(`${rows['tool-result'] ?? 0} tool-result records (expected ${steps - 1})`);
  if (!(rows.event >= 2 * steps - 1))
    problems.push(`${rows.event ?? 0} event records (expected at least ${2 * steps - 1})`);
  if (problems.length > 0) throw new Error(`${where}: ${problems.join(', ')}`);
}

/** Every run of one variant and S journals the same records: the workload is deterministic. */
function sameAsFirst(signatures, steps, signature, where) {
  signatures[steps] ??= signature;
  if (signatures[steps] !== signature)
    throw new Error(`${where}: this run journalled ${signature}, the first ${signatures[steps]}`);
}

function loopstateVariant({ id, label, makeStore, file = null }) {
  const signatures = {};
  return {
    id,
    label,
    framework: 'loopstate',
    baseline: makeStore === null,
    async open({ steps, round, scratch }) {
      const where = `${label}, S = ${steps}`;
      const filePath = file ? path.join(scratch, `${id}-${steps}-${round}.db`) : null;
      if (filePath) removeSqlite(filePath);
      const counting = makeStore ? countingStore(makeStore(filePath)) : null;
      const loop = await createBenchLoop({ steps, latencyMs: 0, store: counting?.store });
      // Opens the database (schema, statements) before the clock starts.
      if (counting) await counting.store.readControl('open');
      const runIds = [];
      return {
        async run() {
          const runId = nextRunId();
          runIds.push(runId);
          counting?.reset();
          resetCounters();
          const started = performance.now();
          const result = await loop.run({ goal: 'go', runId });
          const elapsed = performance.now() - started;
          checkLoopResult(result, steps);
          checkAnswer(result.output, where);
          checkCounts(1, steps, where);
          if (counting) {
            checkJournalRecords(counting.tally, steps, where);
            sameAsFirst(
              signatures,
              steps,
              JSON.stringify({ rows: counting.tally.rows, snapshots: counting.tally.snapshots }),
              where,
            );
          }
          return {
            elapsed,
            written: counting ? counting.tally.journalChars + counting.tally.snapshotChars : 0,
            counting: counting ? structuredClone(counting.tally) : null,
          };
        },
        async account() {
          if (!counting) return null;
          let journal = 0,
            snapshot = 0,
            runRow = 0,
            rows = 0;
          for (const runId of runIds) {
            for (const row of await counting.store.readJournal(runId, 0)) {
              journal += Buffer.byteLength(row.body);
              rows += 1;
            }
            const latest = await counting.store.latestSnapshot(runId);
            if (latest) snapshot += Buffer.byteLength(latest.body);
            const run = await counting.store.readRun(runId);
            if (!run) throw new Error(`${where}: run ${runId} is not in the store`);
            runRow += Buffer.byteLength(run.body);
          }
          await counting.store.close();
          const fileBytes = filePath ? sqliteFileBytes(filePath) : null;
          if (filePath) removeSqlite(filePath);
          return {
            heldBytes: journal + snapshot + runRow,
            journalBytes: journal,
            snapshotBytes: snapshot,
            runRowBytes: runRow,
            records: rows,
            fileBytes,
          };
        },
      };
    },
  };
}

/** The saver as given, counting checkpoints (`put`) and write batches (`putWrites`). */
function countingSaver(saver) {
  const tally = { puts: 0, putWrites: 0, writes: 0 };
  const put = saver.put.bind(saver);
  const putWrites = saver.putWrites.bind(saver);
  saver.put = (...args) => {
    tally.puts += 1;
    return put(...args);
  };
  saver.putWrites = (config, writes, ...rest) => {
    tally.putWrites += 1;
    tally.writes += writes.length;
    return putWrites(config, writes, ...rest);
  };
  return tally;
}

function memorySaverBytes(saver) {
  let bytes = 0,
    checkpoints = 0,
    writes = 0;
  for (const namespaces of Object.values(saver.storage)) {
    for (const byId of Object.values(namespaces)) {
      for (const [checkpoint, metadata] of Object.values(byId)) {
        bytes += checkpoint.byteLength + metadata.byteLength;
        checkpoints += 1;
      }
    }
  }
  for (const byTask of Object.values(saver.writes)) {
    for (const [, , value] of Object.values(byTask)) {
      bytes += value.byteLength;
      writes += 1;
    }
  }
  return { bytes, checkpoints, writes };
}

function sqliteSaverBytes(saver) {
  const checkpoints = saver.db
    .prepare(
      'SELECT count(*) AS rows, coalesce(sum(length(checkpoint)) + sum(length(metadata)), 0) AS bytes FROM checkpoints',
    )
    .get();
  const writes = saver.db
    .prepare('SELECT count(*) AS rows, coalesce(sum(length(value)), 0) AS bytes FROM writes')
    .get();
  return { bytes: checkpoints.bytes + writes.bytes, checkpoints: checkpoints.rows, writes: writes.rows };
}

function langGraphVariant({ id, label, saver: kind = null, synchronous = null, expectSynchronous = null }) {
  const variant = {
    id,
    label,
    framework: 'langgraph',
    baseline: kind === null,
    /** SQLite's `synchronous` as the saver's connection has it (0 OFF, 1 NORMAL, 2 FULL), read at the first open. */
    effectiveSynchronous: null,
    async open({ steps, round, scratch }) {
      const where = `${label}, S = ${steps}`;
      const filePath = kind === 'sqlite' ? path.join(scratch, `${id}-${steps}-${round}.db`) : null;
      if (filePath) removeSqlite(filePath);
      let saver = null;
      if (kind === 'memory') saver = new MemorySaver();
      if (kind === 'sqlite') {
        saver = SqliteSaver.fromConnString(filePath);
        saver.setup();
        if (synchronous) saver.db.pragma(`synchronous = ${synchronous}`);
        variant.effectiveSynchronous ??= saver.db.pragma('synchronous', { simple: true });
        // The label names the level: a different build of better-sqlite3 must not make it lie.
        if (variant.effectiveSynchronous !== expectSynchronous)
          throw new Error(
            `${where}: the saver's connection has synchronous=${variant.effectiveSynchronous}, expected ${expectSynchronous}`,
          );
      }
      const tally = saver ? countingSaver(saver) : null;
      const app = createGraph({ steps, latencyMs: 0, checkpointer: saver ?? undefined });
      let runs = 0;
      return {
        async run() {
          const threadId = saver ? nextRunId() : undefined;
          runs += 1;
          resetCounters();
          const before = tally ? { ...tally } : null;
          const started = performance.now();
          const finalState = await invokeGraph(app, steps, threadId);
          const elapsed = performance.now() - started;
          const last = finalState.messages[finalState.messages.length - 1];
          checkAnswer(JSON.parse(last.content), where);
          checkCounts(1, steps, where);
          // The user's goal, S replies and S − 1 tool results.
          if (finalState.messages.length !== 2 * steps)
            throw new Error(
              `${where}: ${finalState.messages.length} messages in the final state, expected ${2 * steps}`,
            );
          if (tally) {
            // A checkpoint per super-step (the input, S agent steps, S − 1 tool steps, and the first empty one); writes per task.
            const puts = tally.puts - before.puts;
            const putWrites = tally.putWrites - before.putWrites;
            if (puts !== 2 * steps + 1 || putWrites !== 2 * steps)
              throw new Error(
                `${where}: ${puts} checkpoints and ${putWrites} putWrites in a run, expected ${2 * steps + 1} and ${2 * steps}`,
              );
          }
          return {
            elapsed,
            counting: tally
              ? {
                  puts: tally.puts - before.puts,
                  putWrites: tally.putWrites - before.putWrites,
                  writes: tally.writes - before.writes,
                }
              : null,
          };
        },
        async account() {
          if (!saver) return null;
          const held = kind === 'memory' ? memorySaverBytes(saver) : sqliteSaverBytes(saver);
          if (held.checkpoints !== runs * (2 * steps + 1))
            throw new Error(
              `${where}: ${held.checkpoints} checkpoints held after ${runs} runs, expected ${runs * (2 * steps + 1)}`,
            );
          let fileBytes = null;
          if (filePath) {
            saver.db.close();
            fileBytes = sqliteFileBytes(filePath);
            removeSqlite(filePath);
          }
          return {
            heldBytes: held.bytes,
            records: held.checkpoints + held.writes,
            checkpoints: held.checkpoints,
            writes: held.writes,
            fileBytes,
          };
        },
      };
    },
  };
  return variant;
}

/** Every variant, baselines first; `postgresUrl` adds loopstate on Postgres. */
export function variants({ postgresUrl, postgresSchema }) {
  return [
    loopstateVariant({ id: 'loopstate', label: 'loopstate, no store', makeStore: null }),
    loopstateVariant({
      id: 'loopstate-memory',
      label: 'loopstate + memoryStore()',
      makeStore: () => loopstate.memoryStore(),
    }),
    loopstateVariant({
      id: 'loopstate-sqlite-normal',
      label: 'loopstate + sqliteStore (NORMAL)',
      makeStore: (file) => sqliteStore({ path: file }),
      file: true,
    }),
    loopstateVariant({
      id: 'loopstate-sqlite-full',
      label: "loopstate + sqliteStore (durability 'full')",
      makeStore: (file) => sqliteStore({ path: file, durability: 'full' }),
      file: true,
    }),
    ...(postgresUrl
      ? [
          loopstateVariant({
            id: 'loopstate-postgres',
            label: 'loopstate + postgresStore',
            makeStore: () => postgresStore({ connectionString: postgresUrl, schema: postgresSchema }),
          }),
        ]
      : []),
    langGraphVariant({ id: 'langgraph', label: 'LangGraph, no checkpointer' }),
    langGraphVariant({ id: 'langgraph-memory', label: 'LangGraph + MemorySaver', saver: 'memory' }),
    // fromConnString sets WAL only; better-sqlite3 is built with SQLITE_DEFAULT_WAL_SYNCHRONOUS=1, so that is NORMAL.
    langGraphVariant({
      id: 'langgraph-sqlite',
      label: 'LangGraph + SqliteSaver (as shipped: WAL, NORMAL)',
      saver: 'sqlite',
      expectSynchronous: 1,
    }),
    langGraphVariant({
      id: 'langgraph-sqlite-full',
      label: 'LangGraph + SqliteSaver (synchronous=FULL)',
      saver: 'sqlite',
      synchronous: 'FULL',
      expectSynchronous: 2,
    }),
  ];
}
