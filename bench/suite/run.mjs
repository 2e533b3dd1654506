/**
 * The benchmark suite, end to end: builds loopstate at the project root, then measures every adapter
 * on the same workload, each measurement in its own child process, rounds interleaved across the
 * adapters, and writes `bench/RESULTS.md` and `bench/results.json`.
 *
 *   npm run bench                 # full run, a few minutes on 2 cores
 *   npm run bench -- --quick      # shorter: fewer rounds, shorter budgets, no callgrind
 *   options: --no-build  --no-callgrind  --callgrind  --only=loopstate,hand-written  --out=<dir>
 */
import { execFileSync, spawn, spawnSync } from 'node:child_process';
import { existsSync, mkdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { checkpointSection, replaceCheckpointSection } from './checkpoint-report.mjs';
import { renderMarkdown } from './report.mjs';

/** Markers of the section of `RESULTS.md` that holds the figures the docs quote (measured by hand, not by this suite). */
const [DOCS_FIGURES_START, DOCS_FIGURES_END] = ['<!-- docs-figures:start -->', '<!-- docs-figures:end -->'];

const suiteDirectory = path.dirname(fileURLToPath(import.meta.url));
const benchDirectory = path.resolve(suiteDirectory, '..');
const projectRoot = path.resolve(benchDirectory, '..');

const argv = process.argv.slice(2);
const flag = (name) => argv.includes(`--${name}`);
const value = (name) => argv.find((argument) => argument.startsWith(`--${name}=`))?.split('=')[1];
const quick = flag('quick');

export const ADAPTERS = [
  { id: 'hand-written', label: 'hand-written loop' },
  { id: 'plain-xstate', label: 'plain XState (invoked promise actors)' },
  { id: 'loopstate', label: 'loopstate' },
  { id: 'ai-sdk', label: 'Vercel AI SDK (`ai`)' },
  { id: 'openai-agents', label: '`@openai/agents`' },
  { id: 'langgraph', label: '`@langchain/langgraph`' },
  { id: 'langgraph-memory-saver', label: '`@langchain/langgraph` + MemorySaver' },
];
const only = value('only')?.split(',');
const adapters = only ? ADAPTERS.filter((adapter) => only.includes(adapter.id)) : ADAPTERS;

const settings = quick
  ? {
      stepRounds: 1,
      initialWarmupMs: 1500,
      warmupMs: 150,
      budgetMs: 200,
      concurrencyRounds: 1,
      allocationSamples: 3,
      callgrind: flag('callgrind'),
    }
  : {
      stepRounds: 3,
      initialWarmupMs: 2000,
      warmupMs: 300,
      budgetMs: 500,
      concurrencyRounds: 2,
      allocationSamples: 5,
      callgrind: !flag('no-callgrind'),
    };
const STEP_COUNTS = [10, 100, 1000];
const CONCURRENCY = { runs: 1000, steps: 10, latencyMs: 1 };
// A service holds thousands of runs waiting on their models: the same workload ten times wider, one round,
// for the frameworks that finish it in seconds (LangGraph and the Agents SDK would take minutes).
const LARGE_CONCURRENCY = { runs: 10_000, steps: 10, latencyMs: 1 };
const LARGE_CONCURRENCY_ADAPTERS = ['hand-written', 'plain-xstate', 'loopstate', 'ai-sdk'];
const ALLOCATION_STEPS = 100;
const ALLOCATION_FLAGS = ['--min-semi-space-size=128', '--max-semi-space-size=128'];
// Two workloads differing only in the number of timed runs of S = 100: their difference is whole warm runs.
const CALLGRIND = { steps: 100, shortRuns: 2, longRuns: 4, warmupRuns: 100 };
// V8 in its deterministic mode: no concurrent compiler or GC threads, a GC schedule fixed by allocation rather
// than by measured speed, fixed seeds. Without these the count moved 3× between runs of one engine (when the
// JIT optimised, and whether a GC landed in the measured runs, depended on timing); with them two runs agree
// within 0.2%.
const CALLGRIND_NODE_FLAGS = [
  '--single-threaded',
  '--predictable',
  '--predictable-gc-schedule',
  '--random-seed=1',
  '--hash-seed=1',
];

const log = (line) => process.stderr.write(`${line}\n`);

function runChild(mode, adapter, options, nodeFlags = [], wrapper = null) {
  const childArguments = [...nodeFlags, path.join(suiteDirectory, 'child.mjs'), mode, adapter, JSON.stringify(options)];
  const [command, commandArguments] = wrapper
    ? [wrapper[0], [...wrapper.slice(1), process.execPath, ...childArguments]]
    : [process.execPath, childArguments];
  const child = spawnSync(command, commandArguments, {
    cwd: suiteDirectory,
    encoding: 'utf8',
    maxBuffer: 64 * 1024 * 1024,
  });
  if (child.status !== 0) {
    throw new Error(
      `${mode} ${adapter} failed (exit ${child.status}${child.signal ? `, ${child.signal}` : ''}):\n${child.stderr}${child.stdout}`,
    );
  }
  const line = child.stdout.trim().split('\n').pop();
  return { result: JSON.parse(line), stderr: child.stderr };
}

function build() {
  log('building loopstate: npx tsc -p tsconfig.build.json (project root)');
  execFileSync('npx', ['tsc', '-p', 'tsconfig.build.json'], { cwd: projectRoot, stdio: 'inherit' });
}

function git(...gitArguments) {
  try {
    return execFileSync('git', gitArguments, { cwd: projectRoot, encoding: 'utf8' }).trim();
  } catch {
    return null;
  }
}

function packageVersion(name) {
  const manifest = path.join(benchDirectory, 'node_modules', name, 'package.json');
  return existsSync(manifest) ? JSON.parse(readFileSync(manifest, 'utf8')).version : null;
}

function hasValgrind() {
  return spawnSync('valgrind', ['--version'], { encoding: 'utf8' }).status === 0;
}

/** Rotates the adapter order every round, so no adapter always runs first or right after a heavy one. */
const rotated = (list, round) => list.map((_, index) => list[(index + round) % list.length]);

/**
 * Ir of one callgrind workload. Runs in the background (instruction counts do not depend on what else
 * the machine does), beside the allocation measurement, which does not either.
 */
function callgrindInstructions(runs, outputDirectory) {
  const outputFile = path.join(outputDirectory, `callgrind.${runs}.out`);
  const options = JSON.stringify({ steps: CALLGRIND.steps, runs, warmupRuns: CALLGRIND.warmupRuns });
  const commandArguments = [
    '--tool=callgrind',
    `--callgrind-out-file=${outputFile}`,
    process.execPath,
    ...CALLGRIND_NODE_FLAGS,
    path.join(suiteDirectory, 'child.mjs'),
    'callgrind',
    'loopstate',
    options,
  ];
  return new Promise((resolve, reject) => {
    const child = spawn('valgrind', commandArguments, { cwd: suiteDirectory, stdio: ['ignore', 'ignore', 'pipe'] });
    let stderr = '';
    child.stderr.on('data', (chunk) => (stderr += chunk));
    child.on('error', reject);
    child.on('close', (code) => {
      if (code !== 0)
        return reject(new Error(`callgrind workload (${runs} runs) failed with exit ${code}:\n${stderr.slice(-4000)}`));
      const summary = readFileSync(outputFile, 'utf8').match(/^summary:\s*(\d+)/m);
      rmSync(outputFile, { force: true });
      return summary ? resolve(Number(summary[1])) : reject(new Error(`no summary line in ${outputFile}`));
    });
  });
}

async function main() {
  const started = Date.now();
  if (!flag('no-build')) build();
  if (!existsSync(path.join(projectRoot, 'dist/src/index.js')))
    throw new Error(
      'dist/src/index.js is missing: build loopstate first (npx tsc -p tsconfig.build.json at the project root)',
    );
  const head = git('rev-parse', 'HEAD');
  const dirty = git('status', '--porcelain', '--', '.', ':(exclude)bench') ?? '';
  const meta = {
    date: new Date().toISOString(),
    quick,
    loopstate: {
      commit: head,
      subject: git('log', '-1', '--format=%s'),
      branch: git('rev-parse', '--abbrev-ref', 'HEAD'),
      uncommittedChanges: dirty.length > 0,
    },
    versions: Object.fromEntries(
      [
        '@openai/agents',
        'ai',
        '@ai-sdk/provider',
        '@langchain/langgraph',
        '@langchain/langgraph-checkpoint',
        '@langchain/core',
        'xstate',
        'zod',
        'openai',
      ].map((name) => [name, packageVersion(name)]),
    ),
    machine: {
      node: process.version,
      v8: process.versions.v8,
      platform: `${os.type()} ${os.release()} ${os.arch()}`,
      cpu: os.cpus()[0]?.model ?? 'unknown',
      cores: os.cpus().length,
      memoryGiB: Math.round((os.totalmem() / 2 ** 30) * 10) / 10,
      valgrind: hasValgrind() ? spawnSync('valgrind', ['--version'], { encoding: 'utf8' }).stdout.trim() : null,
      // What else ran: on a shared machine the µs figures scale with it (the ratios less so).
      loadAverageAtStart: os.loadavg()[0],
    },
    settings: {
      ...settings,
      stepCounts: STEP_COUNTS,
      concurrency: CONCURRENCY,
      largeConcurrency: LARGE_CONCURRENCY,
      allocationSteps: ALLOCATION_STEPS,
      allocationFlags: ALLOCATION_FLAGS,
      callgrindWorkload: CALLGRIND,
      callgrindNodeFlags: CALLGRIND_NODE_FLAGS,
    },
  };
  log(
    `loopstate ${head?.slice(0, 12)}${meta.loopstate.uncommittedChanges ? ' (+ uncommitted changes)' : ''}; ${quick ? 'quick' : 'full'} run of ${adapters.length} adapters`,
  );

  const steps = Object.fromEntries(adapters.map((adapter) => [adapter.id, []]));
  for (let round = 0; round < settings.stepRounds; round++) {
    for (const adapter of rotated(adapters, round)) {
      const { result } = runChild('steps', adapter.id, {
        stepCounts: STEP_COUNTS,
        initialWarmupMs: settings.initialWarmupMs,
        warmupMs: settings.warmupMs,
        budgetMs: settings.budgetMs,
        minRuns: 1,
      });
      steps[adapter.id].push(result.results);
      log(
        `steps round ${round + 1}/${settings.stepRounds} ${adapter.id}: ${result.results.map((entry) => `S=${entry.steps} ${entry.microsecondsPerStep.toFixed(2)} µs`).join(', ')}`,
      );
    }
  }

  const concurrency = Object.fromEntries(adapters.map((adapter) => [adapter.id, []]));
  for (let round = 0; round < settings.concurrencyRounds; round++) {
    for (const adapter of rotated(adapters, round)) {
      const { result } = runChild('concurrency', adapter.id, { ...CONCURRENCY, liveHeap: round === 0 }, [
        '--expose-gc',
      ]);
      concurrency[adapter.id].push(result);
      log(
        `concurrency round ${round + 1}/${settings.concurrencyRounds} ${adapter.id}: ${result.wallMs.toFixed(0)} ms, peak RSS ${(result.peakRssBytes / 2 ** 20).toFixed(0)} MB`,
      );
    }
  }

  const largeConcurrency = {};
  for (const adapter of adapters.filter(({ id }) => LARGE_CONCURRENCY_ADAPTERS.includes(id))) {
    const { result } = runChild('concurrency', adapter.id, { ...LARGE_CONCURRENCY, liveHeap: true }, ['--expose-gc']);
    largeConcurrency[adapter.id] = result;
    log(
      `${LARGE_CONCURRENCY.runs} concurrent ${adapter.id}: ${result.wallMs.toFixed(0)} ms, peak RSS ${(result.peakRssBytes / 2 ** 20).toFixed(0)} MB`,
    );
  }

  let callgrindPending = null;
  let outputDirectoryForCallgrind = null;
  if (!settings.callgrind) log('callgrind: skipped');
  else if (!adapters.some((adapter) => adapter.id === 'loopstate')) log('callgrind: skipped (loopstate not selected)');
  else if (!hasValgrind()) log('callgrind: skipped (valgrind not installed)');
  else {
    outputDirectoryForCallgrind = path.join(os.tmpdir(), `loopstate-bench-${process.pid}`);
    mkdirSync(outputDirectoryForCallgrind, { recursive: true });
    log(
      `callgrind: loopstate, ${CALLGRIND.shortRuns} and ${CALLGRIND.longRuns} timed runs of S=${CALLGRIND.steps}, in the background (about a minute)`,
    );
    callgrindPending = Promise.all([
      callgrindInstructions(CALLGRIND.shortRuns, outputDirectoryForCallgrind),
      callgrindInstructions(CALLGRIND.longRuns, outputDirectoryForCallgrind),
    ]);
    // Surfaced when awaited below; this keeps an early failure from being reported as unhandled.
    callgrindPending.catch(() => {});
  }

  const allocation = {};
  for (const adapter of adapters) {
    let { result } = runChild(
      'allocation',
      adapter.id,
      { steps: ALLOCATION_STEPS, samples: settings.allocationSamples },
      ALLOCATION_FLAGS,
    );
    // A run that allocates more than the young generation holds always meets a GC; measure shorter runs instead.
    if (result.samples.length === 0)
      ({ result } = runChild(
        'allocation',
        adapter.id,
        { steps: 10, samples: settings.allocationSamples },
        ALLOCATION_FLAGS,
      ));
    allocation[adapter.id] = result;
    log(
      `allocation ${adapter.id}: ${result.samples.map((bytes) => (bytes / 1024).toFixed(1)).join(', ')} KB/step (S=${result.steps}, ${result.discarded} samples dropped for a GC)`,
    );
  }

  let callgrind = null;
  if (callgrindPending) {
    const [short, long] = await callgrindPending;
    rmSync(outputDirectoryForCallgrind, { recursive: true, force: true });
    callgrind = {
      ...CALLGRIND,
      shortInstructions: short,
      longInstructions: long,
      instructionsPerStep: (long - short) / ((CALLGRIND.longRuns - CALLGRIND.shortRuns) * CALLGRIND.steps),
    };
    log(`callgrind: ${Math.round(callgrind.instructionsPerStep).toLocaleString('en-US')} instructions per step`);
  }

  meta.durationSeconds = Math.round((Date.now() - started) / 1000);
  meta.machine.loadAverageAtEnd = os.loadavg()[0];
  const results = { meta, adapters, steps, concurrency, largeConcurrency, allocation, callgrind };
  const outputDirectory = value('out') ? path.resolve(value('out')) : benchDirectory;
  mkdirSync(outputDirectory, { recursive: true });
  writeFileSync(path.join(outputDirectory, 'results.json'), `${JSON.stringify(results, null, 2)}\n`);
  const resultsFile = path.join(outputDirectory, 'RESULTS.md');
  // `bench:checkpoint` owns a section of the same file, and the figures the docs quote another: both are kept,
  // not lost, when the suite rewrites the rest.
  const previous = existsSync(resultsFile) ? readFileSync(resultsFile, 'utf8') : '';
  const kept = checkpointSection(previous);
  const withCheckpoint = kept ? replaceCheckpointSection(renderMarkdown(results), kept) : renderMarkdown(results);
  const [docsStart, docsEnd] = [previous.indexOf(DOCS_FIGURES_START), previous.indexOf(DOCS_FIGURES_END)];
  const docsFigures =
    docsStart !== -1 && docsEnd > docsStart ? previous.slice(docsStart, docsEnd + DOCS_FIGURES_END.length) : null;
  const markdown = docsFigures ? `${withCheckpoint.trimEnd()}\n\n${docsFigures}\n` : withCheckpoint;
  writeFileSync(resultsFile, markdown);
  process.stdout.write(markdown);
  log(`wrote ${path.join(outputDirectory, 'RESULTS.md')} and results.json in ${meta.durationSeconds} s`);
}

main().catch((error) => {
  process.stderr.write(`${error.stack ?? error}\n`);
  process.exitCode = 1;
});
