/** Renders `results.json` as `RESULTS.md`: medians with min–max across rounds, ratios to the hand-written loop. */

export function median(values) {
  const sorted = [...values].sort((a, b) => a - b);
  const middle = sorted.length >> 1;
  return sorted.length % 2 ? sorted[middle] : (sorted[middle - 1] + sorted[middle]) / 2;
}

const summary = (values) => ({ median: median(values), min: Math.min(...values), max: Math.max(...values) });

const fixed = (number) => (number >= 100 ? number.toFixed(0) : number >= 10 ? number.toFixed(1) : number.toFixed(2));
const grouped = (number) => Math.round(number).toLocaleString('en-US');
const spread = ({ median: middle, min, max }, format = fixed) => `${format(middle)} (${format(min)}–${format(max)})`;
const ratio = (value, baseline) =>
  baseline > 0 ? `${(value / baseline).toFixed(value / baseline >= 100 ? 0 : 1)}×` : 'n/a';

/** Per adapter and S: the median, min and max µs/step across rounds. */
export function stepSummaries(results) {
  const out = {};
  for (const adapter of results.adapters) {
    out[adapter.id] = {};
    for (const steps of results.meta.settings.stepCounts) {
      out[adapter.id][steps] = summary(
        results.steps[adapter.id].map((round) => round.find((entry) => entry.steps === steps).microsecondsPerStep),
      );
    }
  }
  return out;
}

export function concurrencySummaries(results) {
  const out = {};
  for (const adapter of results.adapters) {
    const rounds = results.concurrency[adapter.id];
    const live = rounds.map((round) => round.liveHeapPerRunBytes).filter((bytes) => bytes !== null);
    out[adapter.id] = {
      wallMs: summary(rounds.map((round) => round.wallMs)),
      peakRssMiB: summary(rounds.map((round) => round.peakRssBytes / 2 ** 20)),
      peakHeapPerRunKiB: summary(rounds.map((round) => round.peakHeapPerRunBytes / 1024)),
      liveHeapPerRunKiB: live.length ? median(live) / 1024 : null,
    };
  }
  return out;
}

export function renderMarkdown(results) {
  const { meta, adapters } = results;
  const steps = stepSummaries(results);
  const concurrency = concurrencySummaries(results);
  const [small, middle, large] = meta.settings.stepCounts;
  const baseline = steps['hand-written'];
  const baselineConcurrency = concurrency['hand-written'];
  const lines = [];
  lines.push('# Benchmark results', '');
  lines.push(
    `Measured ${meta.date.slice(0, 10)} (${meta.quick ? '`--quick` run' : 'full run'}, ${meta.durationSeconds} s) by \`npm run bench\` in \`bench/\`. ` +
      `loopstate at commit \`${meta.loopstate.commit?.slice(0, 12) ?? 'unknown'}\`${meta.loopstate.uncommittedChanges ? ' **plus uncommitted changes**' : ''} (${meta.loopstate.subject ?? ''}).`,
    '',
  );
  lines.push(
    'Workload, identical for every framework: an instant fake model (no latency) answers `S − 1` replies of one `lookup` tool call each, with fresh arguments, then a final JSON answer; `lookup` returns a short string. ' +
      'Every adapter counts model calls and tool calls and the run fails on any mismatch with `S` and `S − 1` per run. loopstate runs with every guard, no-progress detection and the in-memory trace on, and limits that never stop a run early.',
    '',
  );
  lines.push(`## µs per step (median of ${meta.settings.stepRounds} rounds, min–max)`, '');
  lines.push(
    `| framework | S = ${small} | S = ${middle} | S = ${grouped(large)} | × hand-written (S = ${small} / ${middle} / ${grouped(large)}) | S = ${grouped(large)} ÷ S = ${small} |`,
  );
  lines.push('|---|---:|---:|---:|---:|---:|');
  for (const adapter of adapters) {
    const row = steps[adapter.id];
    const ratios = baseline
      ? [small, middle, large].map((count) => ratio(row[count].median, baseline[count].median)).join(' / ')
      : 'n/a';
    lines.push(
      `| ${adapter.label} | ${spread(row[small])} | ${spread(row[middle])} | ${spread(row[large])} | ${ratios} | ${(row[large].median / row[small].median).toFixed(2)} |`,
    );
  }
  lines.push('');
  const { runs, steps: concurrentSteps, latencyMs } = meta.settings.concurrency;
  lines.push(
    `## ${grouped(runs)} concurrent runs of S = ${concurrentSteps}, ${latencyMs} ms model latency (median of ${meta.settings.concurrencyRounds} rounds, min–max)`,
    '',
  );
  lines.push(
    '| framework | wall ms | × hand-written | peak RSS MiB | heap per in-flight run, KiB (peak sampled) | live heap per in-flight run, KiB (after a full GC) |',
  );
  lines.push('|---|---:|---:|---:|---:|---:|');
  for (const adapter of adapters) {
    const row = concurrency[adapter.id];
    lines.push(
      `| ${adapter.label} | ${spread(row.wallMs)} | ${baselineConcurrency ? ratio(row.wallMs.median, baselineConcurrency.wallMs.median) : 'n/a'} | ${spread(row.peakRssMiB, (number) => number.toFixed(0))} | ${spread(row.peakHeapPerRunKiB, (number) => number.toFixed(1))} | ${row.liveHeapPerRunKiB === null ? 'n/a' : row.liveHeapPerRunKiB.toFixed(1)} |`,
    );
  }
  lines.push('');
  const wide = results.largeConcurrency ?? {};
  if (Object.keys(wide).length > 0 && meta.settings.largeConcurrency) {
    const { runs: largeRuns } = meta.settings.largeConcurrency;
    lines.push(`## ${grouped(largeRuns)} concurrent runs in one process (same workload, one round)`, '');
    lines.push(
      `| framework | wall ms | ÷ its ${grouped(runs)}-run wall time | peak RSS MiB | heap per in-flight run, KiB (peak sampled) | live heap per in-flight run, KiB (after a full GC) |`,
    );
    lines.push('|---|---:|---:|---:|---:|---:|');
    for (const adapter of adapters.filter(({ id }) => wide[id])) {
      const row = wide[adapter.id];
      lines.push(
        `| ${adapter.label} | ${fixed(row.wallMs)} | ${ratio(row.wallMs, concurrency[adapter.id].wallMs.median)} | ${(row.peakRssBytes / 2 ** 20).toFixed(0)} | ${(row.peakHeapPerRunBytes / 1024).toFixed(1)} | ${row.liveHeapPerRunBytes === null ? 'n/a' : (row.liveHeapPerRunBytes / 1024).toFixed(1)} |`,
      );
    }
    lines.push('');
  }
  lines.push('## Allocation per step (median of the samples without a GC, min–max)', '');
  lines.push(
    '| framework | KiB allocated per step | S of the sampled runs | samples kept / dropped for a GC | × hand-written |',
  );
  lines.push('|---|---:|---:|---:|---:|');
  const allocationMedian = (id) =>
    results.allocation[id]?.samples.length ? median(results.allocation[id].samples) : null;
  for (const adapter of adapters) {
    const entry = results.allocation[adapter.id];
    const kib = entry.samples.map((bytes) => bytes / 1024);
    const baselineBytes = allocationMedian('hand-written');
    lines.push(
      `| ${adapter.label} | ${kib.length ? spread(summary(kib), (number) => number.toFixed(1)) : 'n/a (every sample met a GC)'} | ${entry.steps} | ${kib.length} / ${entry.discarded} | ${kib.length && baselineBytes ? ratio(median(entry.samples), baselineBytes) : 'n/a'} |`,
    );
  }
  lines.push('');
  lines.push('## Instructions per step (callgrind, loopstate)', '');
  if (results.callgrind) {
    const {
      steps: callgrindSteps,
      shortRuns,
      longRuns,
      warmupRuns,
      shortInstructions,
      longInstructions,
      instructionsPerStep,
    } = results.callgrind;
    const perStepMicroseconds = steps.loopstate?.[callgrindSteps]?.median;
    lines.push(
      `**${grouped(instructionsPerStep)} instructions per step** at S = ${callgrindSteps} = (Ir of the workload with ${longRuns} timed runs − Ir of the one with ${shortRuns}) / (${longRuns - shortRuns} × ${callgrindSteps} steps); ` +
        `Ir ${grouped(longInstructions)} and ${grouped(shortInstructions)}. Each workload is one process: ${warmupRuns} warm-up runs of S = 10, one untimed run of S = ${callgrindSteps}, then the timed runs; the difference cancels start-up, module loading, warm-up and JIT compilation.` +
        (perStepMicroseconds
          ? ` Beside it: ${fixed(perStepMicroseconds)} µs/step at S = ${callgrindSteps} above.`
          : '') +
        ` Node runs with \`${(meta.settings.callgrindNodeFlags ?? ['--single-threaded']).join(' ')}\`: V8's deterministic mode (without it the count moved 3× between runs, with the JIT's and the GC's timing). Two runs of one engine agreed within 0.2% when this was introduced, but on 2026-12-01 the same build gave 1.57–1.78 M/step across three runs: the workload's run ids and timestamps still differ from run to run. Compare engines side by side in one session, over several runs. It is not a conversion of µs: GC and compilation run on the counted thread, and V8 behaves differently in this mode and under valgrind; compare it between engines, not with the µs above.`,
      '',
    );
  } else
    lines.push('Not measured in this run (`--quick` skips it unless `--callgrind` is given; it needs valgrind).', '');
  lines.push('## Targets of issue 6', '');
  const loopstate = steps.loopstate;
  if (loopstate && baseline) {
    const checks = [
      [`≤ 35 µs/step at S = ${small}`, `${fixed(loopstate[small].median)} µs`, loopstate[small].median <= 35],
      [`≤ 35 µs/step at S = ${middle}`, `${fixed(loopstate[middle].median)} µs`, loopstate[middle].median <= 35],
      steps['plain-xstate'] && [
        `≤ 0.55× plain XState (S = ${middle})`,
        ratio(loopstate[middle].median, steps['plain-xstate'][middle].median),
        loopstate[middle].median <= 0.55 * steps['plain-xstate'][middle].median,
      ],
      steps['ai-sdk'] && [
        `≥ 4.5× faster than the AI SDK (S = ${middle})`,
        `${(steps['ai-sdk'][middle].median / loopstate[middle].median).toFixed(1)}× faster`,
        steps['ai-sdk'][middle].median >= 4.5 * loopstate[middle].median,
      ],
      [
        `flat: S = ${grouped(large)} within 1.3× of S = ${small}`,
        `${(loopstate[large].median / loopstate[small].median).toFixed(2)}×`,
        loopstate[large].median <= 1.3 * loopstate[small].median,
      ],
      concurrency.loopstate &&
        baselineConcurrency && [
          `${grouped(runs)} concurrent runs ≤ 8× the hand-written wall time`,
          ratio(concurrency.loopstate.wallMs.median, baselineConcurrency.wallMs.median),
          concurrency.loopstate.wallMs.median <= 8 * baselineConcurrency.wallMs.median,
        ],
      concurrency.loopstate && [
        `≤ 50 KB heap per in-flight run (peak sampled / live)`,
        `${concurrency.loopstate.peakHeapPerRunKiB.median.toFixed(1)} / ${concurrency.loopstate.liveHeapPerRunKiB?.toFixed(1) ?? 'n/a'} KiB`,
        concurrency.loopstate.peakHeapPerRunKiB.median * 1024 <= 50_000,
      ],
      wide.loopstate &&
        concurrency.loopstate && [
          `${grouped(meta.settings.largeConcurrency.runs)} concurrent runs within 12× of the ${grouped(runs)}-run wall time`,
          ratio(wide.loopstate.wallMs, concurrency.loopstate.wallMs.median),
          wide.loopstate.wallMs <= 12 * concurrency.loopstate.wallMs.median,
        ],
      wide.loopstate && [
        `${grouped(meta.settings.largeConcurrency.runs)} concurrent runs: ≤ 50 KB heap per in-flight run (peak sampled / live)`,
        `${(wide.loopstate.peakHeapPerRunBytes / 1024).toFixed(1)} / ${wide.loopstate.liveHeapPerRunBytes === null ? 'n/a' : (wide.loopstate.liveHeapPerRunBytes / 1024).toFixed(1)} KiB`,
        wide.loopstate.peakHeapPerRunBytes <= 50_000,
      ],
    ].filter(Boolean);
    lines.push('| target | measured | met |', '|---|---:|:---:|');
    for (const [target, measured, met] of checks) lines.push(`| ${target} | ${measured} | ${met ? 'yes' : 'no'} |`);
    lines.push('');
  } else lines.push('Needs the loopstate and hand-written adapters in the run.', '');
  lines.push('## Versions', '');
  lines.push('| package | version |', '|---|---|');
  lines.push(
    `| loopstate | \`${meta.loopstate.commit ?? 'unknown'}\` (branch ${meta.loopstate.branch ?? 'unknown'}${meta.loopstate.uncommittedChanges ? ', uncommitted changes' : ''}) |`,
  );
  for (const [name, version] of Object.entries(meta.versions))
    lines.push(`| ${name} | ${version ?? 'not installed'} |`);
  lines.push('');
  lines.push('## Machine', '');
  const load =
    meta.machine.loadAverageAtStart === undefined
      ? ''
      : ` Load average (1 min) ${meta.machine.loadAverageAtStart.toFixed(1)} at the start and ${meta.machine.loadAverageAtEnd?.toFixed(1) ?? '?'} at the end${meta.machine.loadAverageAtStart > meta.machine.cores ? ': other work shared the cores, so every µs and wall figure is inflated; compare the ratios of one run, not the figures across runs' : ''}.`;
  lines.push(
    `${meta.machine.cpu}, ${meta.machine.cores} cores, ${meta.machine.memoryGiB} GiB; ${meta.machine.platform}; Node ${meta.machine.node} (V8 ${meta.machine.v8}); ${meta.machine.valgrind ?? 'no valgrind'}.${load}`,
    '',
  );
  lines.push('## Method', '');
  const s = meta.settings;
  lines.push(
    `- Every measurement runs in its own child process (\`suite/child.mjs\`), one adapter per process; rounds are interleaved across the adapters and the order rotates every round. Figures are medians across rounds with min–max; ratios are to the hand-written loop's median.`,
    `- µs per step: each process first warms up on S = 10 runs for ≥ ${s.initialWarmupMs} ms, then for each S warms up again for ≥ ${s.warmupMs} ms (skipped when one run, estimated from the previous S, would take longer: the process is already warm, and frameworks whose step cost grows with the history would spend most of the suite there) and times whole sequential runs for ≥ ${s.budgetMs} ms (at least one run); µs/step = wall time / (runs × S). No GC is forced before a timed run: that frees the maps optimised code depends on and V8 deoptimises.`,
    `- Concurrency: after two warm-up batches of 100 concurrent runs, ${grouped(runs)} runs of S = ${concurrentSteps} start at once with a ${latencyMs} ms \`setTimeout\` in every model call; wall time is from the first start to the last answer. Peak RSS is the process's \`maxRSS\` (it includes Node and the framework's modules). *Peak sampled* heap: \`v8.getHeapStatistics().used_heap_size\` read on every 50th model call during the timed batch, maximum minus the value before the batch, divided by ${grouped(runs)} (it includes garbage not yet collected). *Live* heap (first round only, an untimed second batch): a full \`gc()\` halfway through the batch, when every run is waiting on its model, minus the heap after a full GC before the batch, divided by ${grouped(runs)}.`,
    `- Allocation: a separate process with a ${s.allocationFlags[0].split('=')[1]} MB young generation (\`${s.allocationFlags.join(' ')}\`) so that a run usually completes without a scavenge; after 20 warm-up runs, \`used_heap_size\` before and after one run of S = ${s.allocationSteps}, divided by S; a sample during which a \`gc\` performance entry was recorded is dropped. This is bytes allocated per step including the run's fixed cost spread over S (no \`--trace-gc\`).`,
    `- Instructions: \`valgrind --tool=callgrind\` on \`node --single-threaded --predictable --predictable-gc-schedule\` with fixed seeds (no concurrent compiler or GC threads and a GC schedule that does not depend on measured speed, so the count moves far less than without it: 0.2% when introduced, up to about 10% on 2026-12-01; GC and compilation run on the measured thread, so the count includes them), two workloads differing only in the number of timed runs; see above.`,
    "- Adapters (`suite/adapters/`): hand-written loop (zod-validated arguments, final `JSON.parse`); plain XState v5 (one actor per run, `fromPromise` actors invoked for the model and the tool); loopstate from the project's `dist/src/index.js`; `@openai/agents` (Agent + Runner with a custom `Model`, tracing disabled, `maxTurns` = S + 1); `ai` (`generateText` with a provider-less `LanguageModelV3` object and `stopWhen: stepCountIs(S)`); `@langchain/langgraph` (StateGraph over `MessagesAnnotation`, a `BaseChatModel` subclass and the prebuilt `ToolNode`/`toolsCondition`, `recursionLimit` = 2S + 10), with and without a `MemorySaver` (one thread per run, deleted after the run).",
    '',
  );
  return `${lines.join('\n')}\n`;
}
