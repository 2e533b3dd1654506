/**
 * What durability costs per step: the same loop with no store, the in-memory store and SQLite
 * (synchronous NORMAL and FULL), and the bytes the journal holds per step. A step is one model
 * decision and its tool round: two events (the model response, the intent and the result of a read tool
 * are committed with them, so not written as rows of their own),
 * plus a snapshot every `snapshotEvery` events.
 *
 *   npm run bench:journal              # 200 runs of 20 steps and 20 runs of 200 steps per configuration
 *   npm run bench:journal -- 20,200 4000
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { createRequire } from 'node:module';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { performance } from 'node:perf_hooks';
import type BetterSqlite3 from 'better-sqlite3';
import { z } from 'zod';
import { createLoop, defineTool, memoryStore, type Model, type Store } from 'loopstate';
import { sqliteStore } from 'loopstate/sqlite';

const historyLengths = (process.argv[2] ?? '20,200').split(',').map(Number);
const stepsPerConfiguration = Number(process.argv[3] ?? 4_000);
const scratch = mkdtempSync(join(tmpdir(), 'loopstate-journal-bench-'));

function instantModel(steps: number): Model {
  let call = 0;
  return {
    id: 'scripted',
    async generate() {
      call = (call % steps) + 1;
      const usage = { inputTokens: 50, outputTokens: 10 };
      if (call < steps)
        return { text: null, toolCalls: [{ id: `c${call}`, name: 'lookup', arguments: `{"key":"k${call}"}` }], usage };
      return { text: '{"done":true}', toolCalls: [], usage };
    },
  };
}

const lookup = defineTool({
  name: 'lookup',
  description: 'Look a key up.',
  input: z.object({ key: z.string() }),
  access: 'read',
  execute: ({ key }) => `value of ${key}`,
});

interface Configuration {
  name: string;
  store: Store | undefined;
  path: string | null;
  run: (runId: string) => Promise<void>;
  samples: number[];
}

function configuration(name: string, steps: number, store: Store | undefined, path: string | null): Configuration {
  const loop = createLoop({
    model: instantModel(steps),
    tools: [lookup],
    limits: { maxSteps: steps + 1, deadlineMs: Infinity },
    noProgress: { unchangedState: 1_000 },
    ...(store ? { store } : {}),
  });
  return {
    name,
    store,
    path,
    samples: [],
    run: async (runId) => {
      const result = await loop.run({ goal: 'go', runId });
      if (result.stopReason !== 'completed') throw new Error(`run stopped with ${result.stopReason}: ${result.detail}`);
    },
  };
}

/** Rounds interleaved across the configurations, so a noisy neighbour slows them all alike; the median round is reported. */
async function measureAll(steps: number, configurations: Configuration[]): Promise<void> {
  const runsPerRound = Math.max(1, Math.round(stepsPerConfiguration / steps / ROUNDS));
  for (const config of configurations) for (let run = 0; run < 3; run++) await config.run(`warm-${run}`);
  for (let round = 0; round < ROUNDS; round++) {
    for (const config of configurations) {
      const started = performance.now();
      for (let run = 0; run < runsPerRound; run++) await config.run(`run-${round}-${run}`);
      config.samples.push(((performance.now() - started) * 1_000) / (runsPerRound * steps));
    }
  }
}

const ROUNDS = 7;
const median = (values: number[]) => [...values].sort((a, b) => a - b)[Math.floor(values.length / 2)] ?? NaN;

const Database = createRequire(import.meta.url)('better-sqlite3') as typeof BetterSqlite3;

function journalBytes(
  path: string,
  steps: number,
): { journalBytesPerStep: number; rowsPerStep: number; snapshotBytes: number } {
  const db = new Database(path, { readonly: true });
  const journal = db
    .prepare(
      "SELECT count(*) AS rows, sum(length(body) + coalesce(length(packed), 0)) AS bytes, count(DISTINCT run_id) AS runs FROM journal WHERE run_id LIKE 'run-%'",
    )
    .get() as { rows: number; bytes: number; runs: number };
  const snapshot = db
    .prepare("SELECT avg(length(body) + coalesce(length(packed), 0)) AS bytes FROM snapshots WHERE run_id LIKE 'run-%'")
    .get() as {
    bytes: number | null;
  };
  db.close();
  return {
    journalBytesPerStep: journal.bytes / (journal.runs * steps),
    rowsPerStep: journal.rows / (journal.runs * steps),
    snapshotBytes: snapshot.bytes ?? 0,
  };
}

/** The append path alone: one ~1 KB event row per transaction, percentiles over many. */
async function appendLatency(durability: 'normal' | 'full'): Promise<{ p50: number; p99: number }> {
  const store = sqliteStore({ path: join(scratch, `append-${durability}.db`), durability });
  const lease = () => ({ owner: 'bench', until: Date.now() + 60_000 });
  await store.createRun('append', '{}', lease());
  const body = JSON.stringify({ schemaVersion: 1, kind: 'event', padding: 'x'.repeat(1_000) });
  const samples: number[] = [];
  for (let seq = 1; seq <= (durability === 'full' ? 2_000 : 20_000); seq++) {
    const started = performance.now();
    await store.append('append', [{ seq, kind: 'event', body }], lease());
    samples.push((performance.now() - started) * 1_000);
  }
  await store.close();
  samples.sort((a, b) => a - b);
  return {
    p50: samples[Math.floor(samples.length * 0.5)] ?? NaN,
    p99: samples[Math.floor(samples.length * 0.99)] ?? NaN,
  };
}

const rows: string[] = [
  '| steps per run | store | µs per step (median round) | journal µs per step | journal bytes per step | rows per step | snapshot bytes |',
  '|---|---|---|---|---|---|---|',
];
for (const steps of historyLengths) {
  const sqlitePath = (durability: string) => join(scratch, `loop-${steps}-${durability}.db`);
  const configurations = [
    configuration('none', steps, undefined, null),
    configuration('memoryStore', steps, memoryStore(), null),
    configuration('sqlite normal', steps, sqliteStore({ path: sqlitePath('normal') }), sqlitePath('normal')),
    configuration(
      'sqlite full',
      steps,
      sqliteStore({ path: sqlitePath('full'), durability: 'full' }),
      sqlitePath('full'),
    ),
  ];
  await measureAll(steps, configurations);
  const baseline = median(configurations[0]!.samples);
  for (const config of configurations) {
    await config.store?.close();
    const micros = median(config.samples);
    const bytes = config.path === null ? null : journalBytes(config.path, steps);
    rows.push(
      `| ${steps} | ${config.name} | ${micros.toFixed(1)} | ${config.store ? (micros - baseline).toFixed(1) : '—'} | ${bytes ? bytes.journalBytesPerStep.toFixed(0) : '—'} | ${bytes ? bytes.rowsPerStep.toFixed(1) : '—'} | ${bytes ? bytes.snapshotBytes.toFixed(0) : '—'} |`,
    );
  }
}
console.log(rows.join('\n'));
for (const durability of ['normal', 'full'] as const) {
  const { p50, p99 } = await appendLatency(durability);
  console.log(`append of one 1 KB row, sqlite ${durability}: p50 ${p50.toFixed(1)} µs, p99 ${p99.toFixed(1)} µs`);
}
rmSync(scratch, { recursive: true, force: true });
