/** Summarises and renders `checkpoint-cost.mjs`'s rounds: its own section of `RESULTS.md`, between two markers. */

export const SECTION_START = '<!-- checkpoint-cost:start -->';
export const SECTION_END = '<!-- checkpoint-cost:end -->';

/** Per S and variant: µs/step, the µs/step added over the framework's no-store run in the same round, bytes and records per step. */
export function summarise(results, median) {
  const spread = (values) => ({ median: median(values), min: Math.min(...values), max: Math.max(...values) });
  const middle = (samples, key) =>
    samples.every((sample) => sample[key] !== null) ? median(samples.map((sample) => sample[key])) : null;
  const summary = {};
  for (const steps of results.meta.settings.stepCounts) {
    summary[steps] = {};
    for (const variant of results.variants) {
      const samples = results.rounds[variant.id]?.[steps];
      if (!samples) continue;
      const baseline = results.variants.find((other) => other.framework === variant.framework && other.baseline);
      const baselineSamples = results.rounds[baseline.id][steps];
      // Baselines run every round, so every sample has its pair.
      const added = samples.map(
        (sample) =>
          sample.microsecondsPerStep -
          baselineSamples.find((other) => other.round === sample.round).microsecondsPerStep,
      );
      const microseconds = spread(samples.map((sample) => sample.microsecondsPerStep));
      summary[steps][variant.id] = {
        microsecondsPerStep: microseconds,
        addedMicrosecondsPerStep: variant.baseline ? null : spread(added),
        timesNoStore: microseconds.median / median(baselineSamples.map((sample) => sample.microsecondsPerStep)),
        heldBytesPerStep: middle(samples, 'heldBytesPerStep'),
        writtenBytesPerStep: middle(samples, 'writtenBytesPerStep'),
        fileBytesPerStep: middle(samples, 'fileBytesPerStep'),
        recordsPerStep: middle(samples, 'recordsPerStep'),
        runs: samples.reduce((total, sample) => total + sample.runs, 0),
        rounds: samples.length,
      };
    }
  }
  return summary;
}

const fixed = (number) =>
  number === null
    ? '—'
    : Math.abs(number) >= 100
      ? number.toFixed(0)
      : Math.abs(number) >= 10
        ? number.toFixed(1)
        : number.toFixed(2);
const grouped = (number) => (number === null ? '—' : Math.round(number).toLocaleString('en-US'));
const range = (entry) => `${fixed(entry.median)} (${fixed(entry.min)} – ${fixed(entry.max)})`;
const SYNCHRONOUS = ['OFF', 'NORMAL', 'FULL', 'EXTRA'];
const synchronousNames = (byVariant) =>
  Object.entries(byVariant ?? {})
    .map(([id, level]) => `${id} ${SYNCHRONOUS[level] ?? level}`)
    .join(', ');
const load = (values) => values.map((number) => number.toFixed(2)).join(' / ');

export function renderCheckpointSection(results, summary) {
  const { meta } = results;
  const stepCounts = meta.settings.stepCounts;
  const lines = [SECTION_START, "## Durable step cost: loopstate's journal beside LangGraph's checkpointer", ''];
  const commit = meta.loopstate.commit
    ? `\`${meta.loopstate.commit.slice(0, 12)}\` (${meta.loopstate.subject})${meta.loopstate.uncommittedChanges ? ', with uncommitted changes' : ''}`
    : 'unknown';
  lines.push(
    `Measured ${meta.date.slice(0, 10)} (${meta.durationSeconds} s, one process) by \`npm run bench:checkpoint\` in \`bench/\`; loopstate at commit ${commit}. ` +
      `Load average (1 / 5 / 15 min) ${load(meta.loadAverageAtStart)} at the start and ${load(meta.loadAverageAtEnd)} at the end, on ${meta.machine.cores} shared cores (${meta.machine.cpu}, Node ${meta.machine.node}): ` +
      'the absolute µs move with the load; compare the variants within this table.',
    '',
    "Workload: the suite's (`suite/workload.mjs`), the same scripted replies and tool results for both frameworks: an instant model asks for S − 1 `lookup` calls, one per reply, then answers. " +
      "loopstate runs the suite's loop (every guard, no-progress detection, the in-memory trace); LangGraph the suite's graph (`agent` ↔ `tools` over `MessagesAnnotation`, a checkpoint per super-step). " +
      '"Added" is a variant\'s µs/step minus its own framework\'s no-store run in the same round: the cost of its durability.',
    '',
    '| S | variant | µs/step, median (min – max) | added µs/step over no store, median (min – max) | × no store | bytes/step held | bytes/step written | SQLite file bytes/step | records/step | runs (rounds) |',
    '|---:|---|---:|---:|---:|---:|---:|---:|---:|---:|',
  );
  for (const steps of stepCounts) {
    for (const variant of results.variants) {
      const entry = summary[steps][variant.id];
      if (!entry) continue;
      lines.push(
        `| ${steps} | ${variant.label} | ${range(entry.microsecondsPerStep)} | ${entry.addedMicrosecondsPerStep ? range(entry.addedMicrosecondsPerStep) : '—'} | ${entry.timesNoStore.toFixed(2)}× | ` +
          `${grouped(entry.heldBytesPerStep)} | ${grouped(entry.writtenBytesPerStep)} | ${grouped(entry.fileBytesPerStep)} | ${entry.recordsPerStep === null ? '—' : entry.recordsPerStep.toFixed(2)} | ${entry.runs} (${entry.rounds}) |`,
      );
    }
  }
  const pairs = [
    ['loopstate-memory', 'langgraph-memory', 'in memory'],
    ['loopstate-sqlite-normal', 'langgraph-sqlite', 'SQLite, synchronous NORMAL'],
    ['loopstate-sqlite-full', 'langgraph-sqlite-full', 'SQLite, synchronous FULL'],
  ];
  lines.push(
    '',
    'Side by side, LangGraph ÷ loopstate (above 1: the checkpointer costs more than the journal):',
    '',
    `| store | ${stepCounts.map((steps) => `added µs/step, S = ${steps}`).join(' | ')} | ${stepCounts.map((steps) => `bytes/step held, S = ${steps}`).join(' | ')} |`,
    `|---|${stepCounts.map(() => '---:|').join('')}${stepCounts.map(() => '---:|').join('')}`,
  );
  for (const [ours, theirs, name] of pairs) {
    const cell = (steps, pick) => {
      const [a, b] = [summary[steps][theirs], summary[steps][ours]];
      if (!a || !b) return '—';
      const [x, y] = [pick(a), pick(b)];
      return y > 0 ? `${(x / y).toFixed(x / y >= 10 ? 0 : 1)}×` : '—';
    };
    lines.push(
      `| ${name} | ${stepCounts.map((steps) => cell(steps, (entry) => entry.addedMicrosecondsPerStep.median)).join(' | ')} | ${stepCounts.map((steps) => cell(steps, (entry) => entry.heldBytesPerStep)).join(' | ')} |`,
    );
  }
  const [first, ...later] = stepCounts;
  if (later.length > 0) {
    const header = later.map((steps) => `S = ${steps} ÷ S = ${first}`);
    lines.push(
      '',
      `Growth with the run's length (1.00 = a flat cost per step):`,
      '',
      `| variant | ${header.map((label) => `added µs/step, ${label}`).join(' | ')} | ${header.map((label) => `bytes/step held, ${label}`).join(' | ')} |`,
      `|---|${later.map(() => '---:|').join('')}${later.map(() => '---:|').join('')}`,
    );
    const ratio = (a, b) => (a === null || b === null || b <= 0 ? '—' : (a / b).toFixed(2));
    for (const variant of results.variants) {
      const short = summary[first][variant.id];
      if (variant.baseline || !short) continue;
      const added = later.map((steps) => {
        const long = summary[steps][variant.id];
        return long ? ratio(long.addedMicrosecondsPerStep.median, short.addedMicrosecondsPerStep.median) : '—';
      });
      const held = later.map((steps) => {
        const long = summary[steps][variant.id];
        return long ? ratio(long.heldBytesPerStep, short.heldBytesPerStep) : '—';
      });
      lines.push(`| ${variant.label} | ${added.join(' | ')} | ${held.join(' | ')} |`);
    }
  }
  if (results.dbos) {
    const { dbos } = results;
    const server = meta.postgres?.server;
    lines.push(
      '',
      `DBOS step (distributed mode): one \`DBOS.runStep\` with a ${dbos.outputBytes}-byte output, checkpointed in Postgres${server ? ` ${server.version.split(' ')[0]} (fsync ${server.fsync}, synchronous_commit ${server.synchronousCommit})` : ''}: ` +
        `p50 ${grouped(dbos.p50Microseconds)} µs, p95 ${grouped(dbos.p95Microseconds)} µs, mean ${grouped(dbos.meanMicroseconds)} µs over ${dbos.steps.toLocaleString('en-US')} steps, measured after the rounds. ` +
        'In the distributed mode each effect of a loop step (a model call, a tool round) is one DBOS step, inside which it is journalled in `postgresStore` (the rows above, same server); `npm run bench:dbos` measures a whole loop step through a worker.',
    );
  }
  if (meta.skipped.length > 0) {
    lines.push('', 'Not measured:');
    for (const item of meta.skipped)
      lines.push(`- \`${item.id}\`${item.steps.length > 0 ? ` at S = ${item.steps.join(', ')}` : ''}: ${item.reason}.`);
  }
  lines.push(
    '',
    'Method:',
    `- Rounds interleave every variant of both frameworks, the order rotated each round: ${meta.settings.rounds} rounds at each S, except that a variant whose run takes over ${meta.settings.longRunMs / 1000} s stops after ${meta.settings.longRunRounds} (the rounds column); each round of a variant is a fresh instance — a new store or saver, a new SQLite file, a new loop or compiled graph, opened before the clock starts — then sequential runs, each timed alone, until their time reaches ${meta.settings.budgetMs} ms (at least one run). Before the rounds of each S every variant is warmed up for ${meta.settings.warmupMs} ms on its own instance, unless one run is expected to take over 3 s (the process is warm from the shorter S). µs/step of a round = its runs' time ÷ (runs × S).`,
    "- Every run is checked, and a mismatch fails the benchmark: S model calls and S − 1 tool calls, the final answer, S steps and `completed` for loopstate, 2S messages in LangGraph's final state; loopstate's journal holds S `model`, S − 1 `intent`, S − 1 `tool-result` and at least 2S − 1 `event` records per run, the same in every run; LangGraph writes 2S + 1 checkpoints and 2S `putWrites` per run, and the saver holds them all after the round.",
    "- **bytes/step held**: what the store or saver holds after the round, divided by the round's steps. loopstate: the journal records, the latest snapshot and the run's row (the UTF-8 JSON bodies; keys not counted); every journalled character is checked to be held. LangGraph: the serialised checkpoints, their metadata and the pending writes (the serializer's bytes as stored; keys not counted). **bytes/step written** (loopstate): every journal record and every snapshot written, an older snapshot being replaced by the next. **SQLite file bytes/step**: the fresh file of the round (database + WAL after `wal_checkpoint(TRUNCATE)`, keys, indexes and page slack included) divided by its steps. **records/step**: journal rows (loopstate) or checkpoints + pending writes (LangGraph) held.",
    `- SQLite: loopstate's \`sqliteStore\` is WAL with \`synchronous=NORMAL\` (default) or FULL (\`durability: 'full'\`), one transaction per journal record. \`SqliteSaver.fromConnString\` sets WAL and nothing else, and better-sqlite3 is built with \`SQLITE_DEFAULT_WAL_SYNCHRONOUS=1\`, so as shipped it runs at NORMAL (read back from its connection: ${synchronousNames(meta.sqliteSaverSynchronous)}): the shipped saver pairs with loopstate's default, the FULL row (\`synchronous = FULL\` set on its connection) with \`durability: 'full'\`. ` +
      `Both on better-sqlite3 ${meta.versions['better-sqlite3 (loopstate)']} / ${meta.versions['better-sqlite3 (SqliteSaver)']}, files in the OS temp directory.`,
    `- Versions: ${Object.entries(meta.versions)
      .map(([name, version]) => `${name} ${version}`)
      .join(', ')}.`,
    SECTION_END,
  );
  return lines.join('\n');
}

/** `text` with its checkpoint-cost section replaced by `section`, or `section` appended when it has none. */
export function replaceCheckpointSection(text, section) {
  const start = text.indexOf(SECTION_START);
  const end = text.indexOf(SECTION_END);
  if (start !== -1 && end > start) return `${text.slice(0, start)}${section}${text.slice(end + SECTION_END.length)}`;
  return `${text.trimEnd()}\n\n${section}\n`;
}

/** The checkpoint-cost section of `text`, or null: the suite keeps it when it rewrites `RESULTS.md`. */
export function checkpointSection(text) {
  const start = text.indexOf(SECTION_START);
  const end = text.indexOf(SECTION_END);
  return start !== -1 && end > start ? text.slice(start, end + SECTION_END.length) : null;
}
