/**
 * What a durable step costs: loopstate's journal beside LangGraph.js's checkpointer, side by side in one
 * process, on the suite's workload (`workload.mjs`: an instant model asks for S − 1 `lookup` calls, one per
 * reply, then answers; the same replies and tool results for both). For each S, rounds interleave every
 * variant, the order rotated each round; a variant's cost is its µs/step minus its own framework's
 * no-store run in the same round (median across rounds), and the bytes its store or saver holds after the
 * round's runs, per step. Every run is checked: the model and tool calls it made, its answer, and the
 * journal records or checkpoints it wrote.
 *
 *   npm run bench:checkpoint                                   # S = 20, 100, 500, about 3 minutes on 2 cores
 *   npm run bench:checkpoint -- --steps=20,100 --rounds=3      # also --budget-ms=300, --no-build, --no-write
 *   LOOPSTATE_TEST_POSTGRES_URL=postgresql://… npm run bench:checkpoint   # adds loopstate + postgresStore and DBOS.runStep
 *
 * Writes its section of `bench/RESULTS.md` (between the checkpoint-cost markers) and `bench/checkpoint-results.json`.
 */
import { execFileSync } from 'node:child_process';
import { existsSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { dropSchema, measureDbosStep } from './checkpoint-dbos.mjs';
import { renderCheckpointSection, replaceCheckpointSection, summarise } from './checkpoint-report.mjs';

const suiteDirectory = path.dirname(fileURLToPath(import.meta.url));
const benchDirectory = path.resolve(suiteDirectory, '..');
const projectRoot = path.resolve(benchDirectory, '..');

const argv = process.argv.slice(2);
const flag = (name) => argv.includes(`--${name}`);
const value = (name) => argv.find((argument) => argument.startsWith(`--${name}=`))?.split('=')[1];
const STEP_COUNTS = (value('steps') ?? '20,100,500').split(',').map(Number);
const ROUNDS = value('rounds') ? Number(value('rounds')) : null;
const BUDGET_MS = Number(value('budget-ms') ?? 300);
const DBOS_STEPS = Number(value('dbos-steps') ?? 1_000);
const WARMUP_MS = 300;
const ROUND_COUNT = ROUNDS ?? 5;
// One LangGraph + SqliteSaver run of S = 500 takes 8–25 s here (with the load), MemorySaver 6–20 s: a variant whose run takes over
// LONG_RUN_MS stops after LONG_RUN_ROUNDS rounds (each of its samples is a whole long run, which varies little), so the
// benchmark stays near 3 minutes while the cheap variants, whose short runs the machine's load moves most, get every round.
const LONG_RUN_MS = 3_000;
const LONG_RUN_ROUNDS = Math.min(2, ROUND_COUNT);
/** Variants left out at some S, and why (printed and written beside the figures). */
const SKIPS = [
  {
    id: 'langgraph-sqlite-full',
    skip: (steps) => steps > 100 && !flag('all'),
    reason:
      "SqliteSaver with synchronous=FULL is measured at S ≤ 100 only, to keep the benchmark near 3 minutes: its run of S = 500 is the shipped saver's, the longest of the table, plus an fsync on each of its ~2,000 commits of up to a few hundred KB; `--all` includes it",
  },
];

const log = (line) => process.stderr.write(`${line}\n`);
const median = (values) => {
  const sorted = [...values].sort((a, b) => a - b);
  const middle = sorted.length >> 1;
  return sorted.length % 2 ? sorted[middle] : (sorted[middle - 1] + sorted[middle]) / 2;
};
const rotated = (list, round) => list.map((_, index) => list[(index + round) % list.length]);
const git = (...gitArguments) => {
  try {
    return execFileSync('git', gitArguments, { cwd: projectRoot, encoding: 'utf8' }).trim();
  } catch {
    return null;
  }
};
const packageVersion = (directory, name) => {
  const manifest = path.join(directory, 'node_modules', name, 'package.json');
  return existsSync(manifest) ? JSON.parse(readFileSync(manifest, 'utf8')).version : null;
};

/** The server's version and its durability settings (the CI's throwaway server runs with fsync off). */
async function postgresVersion(postgresUrl) {
  const pg = createRequire(path.join(projectRoot, 'package.json'))('pg');
  const client = new pg.Client({ connectionString: postgresUrl });
  await client.connect();
  try {
    const setting = async (name) => (await client.query(`SHOW ${name}`)).rows[0][name];
    return {
      version: await setting('server_version'),
      fsync: await setting('fsync'),
      synchronousCommit: await setting('synchronous_commit'),
    };
  } finally {
    await client.end();
  }
}

/**
 * One timed round of a variant: a fresh instance, sequential runs until their time reaches the budget (at
 * least one; a round is not sized from an estimate, which the machine's load would make wrong), then what
 * they left persisted.
 */
async function measureRound(variant, { steps, round, scratch }) {
  const instance = await variant.open({ steps, round, scratch });
  let elapsed = 0,
    written = 0,
    journalChars = 0,
    runs = 0;
  const counts = [];
  while (runs === 0 || (elapsed < BUDGET_MS && runs < 200)) {
    runs += 1;
    const outcome = await instance.run();
    elapsed += outcome.elapsed;
    written += outcome.written ?? 0;
    journalChars += outcome.counting?.journalChars ?? 0;
    counts.push(outcome.counting);
  }
  const held = await instance.account();
  // Journal rows are never rewritten: what the round appended is what the store holds, byte for byte.
  if (held?.journalBytes !== undefined && held.journalBytes !== journalChars) {
    throw new Error(
      `${variant.label}, S = ${steps}: the journal wrote ${journalChars} characters and the store holds ${held.journalBytes} bytes`,
    );
  }
  const perStep = (total) => (total === null || total === undefined ? null : total / (runs * steps));
  return {
    round,
    runs,
    elapsedMs: elapsed,
    microsecondsPerStep: (elapsed * 1000) / (runs * steps),
    heldBytesPerStep: perStep(held?.heldBytes),
    writtenBytesPerStep: variant.framework === 'loopstate' && held ? perStep(written) : null,
    fileBytesPerStep: perStep(held?.fileBytes),
    recordsPerStep: perStep(held?.records),
    detail: held,
    countsPerRun: counts[0],
  };
}

/** Untimed runs until the variant is warm; none when one run is expected to take longer than a few seconds. */
async function warmUp(variant, { steps, scratch, expectedRunMs }) {
  if (expectedRunMs !== null && expectedRunMs > 3_000) return false;
  const instance = await variant.open({ steps, round: 'warm', scratch });
  const started = performance.now();
  for (let runs = 0; runs < 2 || (performance.now() - started < WARMUP_MS && runs < 200); runs++) await instance.run();
  await instance.account();
  return true;
}

async function main() {
  const started = Date.now();
  if (!flag('no-build')) {
    log('building loopstate: npx tsc -p tsconfig.build.json (project root)');
    execFileSync('npx', ['tsc', '-p', 'tsconfig.build.json'], { cwd: projectRoot, stdio: 'inherit' });
  }
  if (!existsSync(path.join(projectRoot, 'dist/src/index.js')))
    throw new Error('dist/src/index.js is missing: build loopstate first (npm run build at the project root)');
  const loadAverageAtStart = os.loadavg();
  const postgresUrl = process.env.LOOPSTATE_TEST_POSTGRES_URL ?? null;
  const postgresSchema = `loopstate_bench_${Date.now().toString(36)}`;
  const { variants } = await import('./checkpoint-variants.mjs');
  const all = variants({ postgresUrl, postgresSchema });
  const skipped = [];
  if (!postgresUrl) {
    const reason = 'LOOPSTATE_TEST_POSTGRES_URL is not set (bash .ci/postgres.sh start /tmp/pg prints one)';
    skipped.push({ id: 'loopstate-postgres', steps: STEP_COUNTS, reason }, { id: 'DBOS.runStep', steps: [], reason });
  }
  const scratch = mkdtempSync(path.join(os.tmpdir(), 'loopstate-checkpoint-bench-'));
  const rounds = {};
  const warmedUp = {};
  const lastRunMs = {};
  try {
    for (const steps of STEP_COUNTS) {
      const active = all.filter((variant) => !SKIPS.some((rule) => rule.id === variant.id && rule.skip(steps)));
      for (const rule of SKIPS) {
        if (rule.skip(steps) && all.some((variant) => variant.id === rule.id)) {
          const entry = skipped.find((item) => item.id === rule.id && item.reason === rule.reason);
          if (entry) entry.steps.push(steps);
          else skipped.push({ id: rule.id, steps: [steps], reason: rule.reason });
        }
      }
      warmedUp[steps] = {};
      for (const variant of active) {
        // The checkpointer's cost per step grows with S: expect the worst (quadratic) from the last S measured.
        const previous = lastRunMs[variant.id];
        const expected = previous ? previous.ms * (steps / previous.steps) ** 2 : null;
        warmedUp[steps][variant.id] = await warmUp(variant, { steps, scratch, expectedRunMs: expected });
      }
      log(
        `S = ${steps}: up to ${ROUND_COUNT} rounds; warmed up ${JSON.stringify(warmedUp[steps])}; load ${os.loadavg()[0].toFixed(2)}`,
      );
      for (let round = 0; round < ROUND_COUNT; round++) {
        for (const variant of rotated(active, round)) {
          // Baselines run every round: every other variant's round is paired with its framework's no-store run.
          const last = rounds[variant.id]?.[steps]?.at(-1);
          if (!variant.baseline && round >= LONG_RUN_ROUNDS && last && last.elapsedMs / last.runs > LONG_RUN_MS)
            continue;
          const sample = await measureRound(variant, { steps, round, scratch });
          ((rounds[variant.id] ??= {})[steps] ??= []).push(sample);
          lastRunMs[variant.id] = { steps, ms: sample.elapsedMs / sample.runs };
          log(
            `  round ${round + 1} ${variant.label}: ${sample.microsecondsPerStep.toFixed(1)} µs/step (${sample.runs} runs)`,
          );
        }
      }
    }
  } finally {
    rmSync(scratch, { recursive: true, force: true });
    if (postgresUrl) await dropSchema({ projectRoot, postgresUrl, schema: postgresSchema });
  }
  // After the rounds, not among them: DBOS is process-wide and keeps its own pollers running while launched.
  let dbos = null;
  if (postgresUrl) {
    log(`DBOS.runStep: ${DBOS_STEPS} steps`);
    dbos = await measureDbosStep({ projectRoot, postgresUrl, steps: DBOS_STEPS });
  }
  const loadAverageAtEnd = os.loadavg();
  const meta = {
    date: new Date().toISOString(),
    durationSeconds: Math.round((Date.now() - started) / 1000),
    loopstate: {
      commit: git('rev-parse', 'HEAD'),
      subject: git('log', '-1', '--format=%s'),
      branch: git('rev-parse', '--abbrev-ref', 'HEAD'),
      uncommittedChanges: (git('status', '--porcelain', '--untracked-files=no') ?? '') !== '',
    },
    versions: {
      '@langchain/langgraph': packageVersion(benchDirectory, '@langchain/langgraph'),
      '@langchain/langgraph-checkpoint': packageVersion(benchDirectory, '@langchain/langgraph-checkpoint'),
      '@langchain/langgraph-checkpoint-sqlite': packageVersion(
        benchDirectory,
        '@langchain/langgraph-checkpoint-sqlite',
      ),
      '@langchain/core': packageVersion(benchDirectory, '@langchain/core'),
      'better-sqlite3 (loopstate)': packageVersion(projectRoot, 'better-sqlite3'),
      'better-sqlite3 (SqliteSaver)': packageVersion(benchDirectory, 'better-sqlite3'),
      ...(dbos
        ? {
            '@dbos-inc/dbos-sdk': packageVersion(projectRoot, '@dbos-inc/dbos-sdk'),
            pg: packageVersion(projectRoot, 'pg'),
          }
        : {}),
      xstate: packageVersion(projectRoot, 'xstate'),
    },
    machine: {
      node: process.version,
      platform: `${os.type()} ${os.release()} ${os.arch()}`,
      cpu: os.cpus()[0]?.model.trim() ?? 'unknown',
      cores: os.cpus().length,
    },
    loadAverageAtStart,
    loadAverageAtEnd,
    settings: {
      stepCounts: STEP_COUNTS,
      rounds: ROUND_COUNT,
      longRunMs: LONG_RUN_MS,
      longRunRounds: LONG_RUN_ROUNDS,
      budgetMs: BUDGET_MS,
      warmupMs: WARMUP_MS,
      warmedUp,
    },
    postgres: postgresUrl ? { schema: postgresSchema, server: await postgresVersion(postgresUrl) } : null,
    sqliteSaverSynchronous: Object.fromEntries(
      all
        .filter((variant) => variant.effectiveSynchronous !== null && variant.effectiveSynchronous !== undefined)
        .map((variant) => [variant.id, variant.effectiveSynchronous]),
    ),
    skipped,
  };
  const results = {
    meta,
    variants: all.map(({ id, label, framework, baseline }) => ({ id, label, framework, baseline })),
    rounds,
    dbos,
  };
  const summary = summarise(results, median);
  const section = renderCheckpointSection(results, summary);
  process.stdout.write(`${section}\n`);
  if (!flag('no-write')) {
    writeFileSync(
      path.join(benchDirectory, 'checkpoint-results.json'),
      `${JSON.stringify({ ...results, summary }, null, 2)}\n`,
    );
    const resultsFile = path.join(benchDirectory, 'RESULTS.md');
    writeFileSync(
      resultsFile,
      replaceCheckpointSection(existsSync(resultsFile) ? readFileSync(resultsFile, 'utf8') : '', section),
    );
    log(`wrote its section of ${resultsFile} and checkpoint-results.json in ${meta.durationSeconds} s`);
  }
}

await main();
