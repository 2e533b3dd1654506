/**
 * One measurement in its own process: `node child.mjs <mode> <adapter> <json options>`; prints one
 * JSON line. Modes: `steps` (µs per step at each S), `concurrency` (N concurrent runs with model
 * latency), `allocation` (bytes allocated per step; run with a large young generation, see run.mjs),
 * `callgrind` (a fixed workload for instruction counts). Never forces a GC before a timed run: that
 * frees the maps optimised code depends on and V8 deoptimises.
 */
import { PerformanceObserver, performance } from 'node:perf_hooks';
import v8 from 'node:v8';
import { checkAnswer, checkCounts, counters, hooks, resetCounters } from './workload.mjs';

const [mode, adapterName, optionsJson] = process.argv.slice(2);
const options = JSON.parse(optionsJson ?? '{}');
const { createRunner } = await import(`./adapters/${adapterName}.mjs`);

/** Runs `runs` sequential runs, checking every answer and the call counts of the batch. */
async function sequential(runner, steps, runs) {
  resetCounters();
  for (let index = 0; index < runs; index++) checkAnswer(await runner.run(), adapterName);
  checkCounts(runs, steps, adapterName);
}

async function concurrent(runner, steps, runs) {
  resetCounters();
  const answers = await Promise.all(Array.from({ length: runs }, () => runner.run()));
  for (const answer of answers) checkAnswer(answer, adapterName);
  checkCounts(runs, steps, adapterName);
}

/**
 * Warm-up and timed batches of whole runs; the timed batch runs until `budgetMs` has passed. A run
 * expected (from the previous S) to outlast the warm-up budget is not warmed up again: the process is
 * already warm, and frameworks whose step cost grows with the history would spend most of the suite there.
 */
async function measureSteps(steps, expectedRunMs) {
  const runner = await createRunner({ steps, latencyMs: 0 });
  const warmupStarted = performance.now();
  if (expectedRunMs <= options.warmupMs) {
    do await sequential(runner, steps, 1);
    while (performance.now() - warmupStarted < options.warmupMs);
  }
  let runs = 0;
  let elapsedMs = 0;
  while (runs < options.minRuns || elapsedMs < options.budgetMs) {
    const batch = Math.max(1, Math.min(1000, Math.ceil(runs / 4)));
    const started = performance.now();
    await sequential(runner, steps, batch);
    elapsedMs += performance.now() - started;
    runs += batch;
  }
  return { steps, runs, microsecondsPerStep: (elapsedMs * 1000) / (runs * steps) };
}

async function measureConcurrency() {
  const { runs, steps, latencyMs } = options;
  const runner = await createRunner({ steps, latencyMs });
  for (let round = 0; round < 2; round++) await concurrent(runner, steps, Math.min(runs, 100));
  // Heap sampled on every 50th model call while the runs are in flight (no forced GC: this batch is timed).
  let peakHeap = 0;
  const sample = () => {
    if (counters.modelCalls % 50 === 0) peakHeap = Math.max(peakHeap, v8.getHeapStatistics().used_heap_size);
  };
  const heapBefore = v8.getHeapStatistics().used_heap_size;
  const rssBefore = process.memoryUsage.rss();
  hooks.onModelCall = sample;
  const started = performance.now();
  await concurrent(runner, steps, runs);
  const wallMs = performance.now() - started;
  hooks.onModelCall = null;
  const peakRssBytes = process.resourceUsage().maxRSS * 1024;
  // Untimed: the live heap per in-flight run, taken with a full GC halfway through a second batch,
  // when every run is waiting on its model.
  let liveHeap = 0;
  const halfway = (runs * steps) / 2;
  if (options.liveHeap && typeof globalThis.gc === 'function') {
    globalThis.gc();
    const liveBefore = v8.getHeapStatistics().used_heap_size;
    hooks.onModelCall = () => {
      if (counters.modelCalls === halfway) {
        globalThis.gc();
        liveHeap = v8.getHeapStatistics().used_heap_size - liveBefore;
      }
    };
    await concurrent(runner, steps, runs);
    hooks.onModelCall = null;
  }
  return {
    runs,
    steps,
    latencyMs,
    wallMs,
    peakRssBytes,
    rssBeforeBytes: rssBefore,
    peakHeapPerRunBytes: (peakHeap - heapBefore) / runs,
    liveHeapPerRunBytes: options.liveHeap ? liveHeap / runs : null,
  };
}

async function measureAllocation() {
  const { steps, samples } = options;
  const runner = await createRunner({ steps, latencyMs: 0 });
  let collections = 0;
  const observer = new PerformanceObserver((list) => {
    collections += list.getEntries().length;
  });
  observer.observe({ entryTypes: ['gc'] });
  const settle = () => new Promise((resolve) => setImmediate(resolve));
  for (let warmup = 0; warmup < 20; warmup++) await sequential(runner, steps, 1);
  const perStep = [];
  let discarded = 0;
  for (let attempt = 0; perStep.length < samples && attempt < samples * 6; attempt++) {
    await settle();
    const collectionsBefore = collections;
    const before = v8.getHeapStatistics().used_heap_size;
    await sequential(runner, steps, 1);
    const after = v8.getHeapStatistics().used_heap_size;
    await settle();
    // A sample during which any GC ran does not measure allocation; it is dropped.
    if (collections === collectionsBefore && after > before) perStep.push((after - before) / steps);
    else discarded++;
  }
  observer.disconnect();
  return { steps, samples: perStep, discarded };
}

/** Warm-up runs of S = 10, then `runs` runs of S; two such workloads differing only in `runs` cancel everything but the extra runs. */
async function callgrindWorkload() {
  const { steps, warmupRuns, runs } = options;
  const warm = await createRunner({ steps: 10, latencyMs: 0 });
  await sequential(warm, 10, warmupRuns);
  const runner = await createRunner({ steps, latencyMs: 0 });
  await sequential(runner, steps, 1);
  await sequential(runner, steps, runs);
  return { steps, runs, warmupRuns };
}

/** The process is warmed up first on S = 10 runs, then every S gets its own warm-up before its timed batch. */
async function measureAllStepCounts() {
  const warm = await createRunner({ steps: 10, latencyMs: 0 });
  const started = performance.now();
  for (let runs = 0; runs < 3 || performance.now() - started < options.initialWarmupMs; runs++)
    await sequential(warm, 10, 1);
  const results = [];
  let microsecondsPerStep = 0;
  for (const steps of options.stepCounts) {
    const result = await measureSteps(steps, (microsecondsPerStep * steps) / 1000);
    microsecondsPerStep = result.microsecondsPerStep;
    results.push(result);
  }
  return { results };
}

const measure = {
  steps: measureAllStepCounts,
  concurrency: measureConcurrency,
  allocation: measureAllocation,
  callgrind: callgrindWorkload,
}[mode];
if (!measure) throw new Error(`unknown mode ${mode}`);
const result = await measure();
process.stdout.write(`${JSON.stringify({ mode, adapter: adapterName, ...result })}\n`);
