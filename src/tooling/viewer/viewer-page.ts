/**
 * The viewer's one HTML page: the statechart with the run's path, the time-travel slider and panels,
 * the step table and the stop reason in words. Everything is inline (styles, script, data), so the
 * page works with no network at all.
 */
import { basename } from 'node:path';
import type { RunTimeline, StepRow } from './run-timeline.js';
import { escapeHtml, statechartSvg } from './statechart-svg.js';
import type { StatechartLayout } from './statechart-layout.js';
import { VIEWER_SCRIPT } from './viewer-script.js';

const STYLE = `
:root { --ink: #1d2330; --muted: #6b7385; --line: #c9ceda; --taken: #2f6fde; --current: #e8590c; --active: #ffe8cc; --bg: #f6f7fb; }
* { box-sizing: border-box; }
body { margin: 0; font: 13px/1.45 system-ui, -apple-system, "Segoe UI", Roboto, sans-serif; color: var(--ink); background: var(--bg); }
header { padding: 14px 20px; background: #fff; border-bottom: 1px solid var(--line); }
h1 { margin: 0 0 4px; font-size: 17px; }
h2 { font-size: 14px; margin: 0 0 8px; }
.meta { color: var(--muted); }
.badge { display: inline-block; padding: 1px 8px; border-radius: 10px; font-weight: 600; background: #e6e9f2; }
.badge.succeeded { background: #d3f9d8; color: #2b8a3e; } .badge.failed { background: #ffe3e3; color: #c92a2a; } .badge.needs_human { background: #fff3bf; color: #a06000; }
#stop { margin-top: 8px; }
#stop-reason code { font-weight: 700; }
main { display: grid; grid-template-columns: minmax(0, 1fr) 420px; gap: 16px; padding: 16px 20px; }
.panel { background: #fff; border: 1px solid var(--line); border-radius: 8px; padding: 12px 14px; }
#chart-panel { overflow: auto; }
#side { display: flex; flex-direction: column; gap: 12px; }
#statechart { display: block; width: 100%; height: auto; font: 13px system-ui, sans-serif; }
#statechart .state rect { fill: #fff; stroke: #8a93a8; stroke-width: 1.2; }
#statechart .state.compound > rect { fill: #f3f5fa; stroke: #b4bbcb; }
#statechart .compound-title { font-weight: 700; font-size: 14px; fill: #4a5266; }
#statechart .final-ring { fill: none !important; }
#statechart .initial-dot { fill: #4a5266; }
#statechart .state.active > rect { fill: var(--active); stroke: var(--current); stroke-width: 3; }
#statechart .state.active-parent > rect { stroke: var(--current); stroke-dasharray: 5 3; }
#statechart .edge path { fill: none; stroke: #c3c8d4; stroke-width: 1.1; }
#statechart .edge.eventless path { stroke-dasharray: 4 3; }
#statechart .edge.taken path { stroke: var(--taken); stroke-width: 3; }
#statechart .edge.current path { stroke: var(--current); stroke-width: 4; }
#statechart marker path { fill: #8a93a8; }
#statechart .edge-label { fill: #8a91a3; font-size: 13px; }
#statechart .edge.taken .edge-label { fill: var(--taken); font-weight: 600; }
#statechart .edge.current .edge-label { fill: var(--current); font-weight: 700; }
#statechart .label-bg { fill: #fff; opacity: 0.9; }
#statechart .edge-count { fill: var(--taken); font-weight: 700; font-size: 13px; }
#statechart .edge.stop rect { fill: #8a93a8; }
#statechart .edge.stop.taken rect { fill: var(--taken); }
#statechart .edge.stop.current rect { fill: var(--current); stroke: var(--current); stroke-width: 3; }
#statechart .legend text { fill: #4a5266; }
#statechart .legend-stop rect { fill: #8a93a8; }
#statechart .edge.interruption rect { fill: #fff; stroke: #b4bbcb; }
#statechart .edge.interruption.taken rect { stroke: var(--taken); stroke-width: 2.5; }
#statechart .edge.interruption.taken text { fill: var(--taken); font-weight: 700; }
#statechart .edge.interruption.current rect { fill: var(--active); stroke: var(--current); stroke-width: 3; }
.slider-row { display: flex; align-items: center; gap: 8px; }
#step-slider { flex: 1; }
button { font: inherit; padding: 2px 10px; border: 1px solid var(--line); background: #fff; border-radius: 5px; cursor: pointer; }
#active-state { font: 700 16px ui-monospace, monospace; color: var(--current); }
table { border-collapse: collapse; width: 100%; }
th, td { text-align: left; padding: 3px 6px; border-bottom: 1px solid #eceef4; vertical-align: top; }
thead th { color: var(--muted); font-weight: 600; }
td.spent, td.limit { font-variant-numeric: tabular-nums; white-space: nowrap; }
.meter { width: 90px; }
.bar { height: 7px; background: #eceef4; border-radius: 4px; overflow: hidden; margin-top: 5px; }
.fill { height: 100%; background: var(--taken); } .fill.high { background: #f08c00; } .fill.full { background: #e03131; }
.muted { color: var(--muted); } .warn { color: #c92a2a; }
#steps-panel { margin: 0 20px 16px; }
#step-table td { font-variant-numeric: tabular-nums; }
#step-table tbody tr { cursor: pointer; }
#step-table tbody tr.current { background: var(--active); }
.ok { color: #2b8a3e; font-weight: 600; } .bad { color: #c92a2a; font-weight: 600; }
.summary { color: var(--muted); max-width: 360px; overflow-wrap: anywhere; }
#notes { margin: 0 20px 24px; color: var(--muted); }
#notes li { margin-bottom: 3px; }
`;

const usd = (value: number) => `$${value.toFixed(value < 0.01 ? 6 : 4)}`;
const ms = (value: number) => (value >= 1000 ? `${(value / 1000).toFixed(2)} s` : `${Math.round(value)} ms`);

function stepRowHtml(row: StepRow, index: number): string {
  const effect =
    row.decision === 'tool_calls'
      ? 'model → tool calls'
      : row.decision === 'final'
        ? 'model → final reply'
        : `model → ${row.decision}`;
  const tools =
    row.toolCalls.length === 0
      ? '<span class="muted">—</span>'
      : row.toolCalls
          .map(
            (call) =>
              `<div><code>${escapeHtml(call.name)}</code> ${escapeHtml(call.argumentsSummary)} → ${call.status === null ? `<span class="muted">not run</span>${call.argumentError === null ? '' : ` <span class="summary">(arguments sent back: ${escapeHtml(call.argumentError)})</span>`}` : `${call.status === 'ok' ? '<span class="ok">ok</span>' : `<span class="bad">${escapeHtml(call.status)}</span>`}${call.latencyMs === null ? '' : ` · ${ms(call.latencyMs)}`}${call.bytes === null ? '' : ` · ${call.bytes} B`}`}</div>`,
          )
          .join('');
  const verdict =
    row.verdict === null
      ? '<span class="muted">—</span>'
      : row.verdict.passed
        ? '<span class="ok">passed</span>'
        : `<span class="bad">rejected</span> <span class="summary">${escapeHtml(row.verdict.evaluator ? `${row.verdict.evaluator}: ` : '')}${escapeHtml(row.verdict.reason)}</span>`;
  const retries =
    row.retriesBefore.length === 0
      ? '<span class="muted">0</span>'
      : `${row.retriesBefore.length} <span class="summary">(${row.retriesBefore.map((error) => `${escapeHtml(error.errorKind)}${error.retryDelayMs === null ? '' : `, waited ${ms(error.retryDelayMs)}`}`).join('; ')})</span>`;
  const reply = row.replySummary === null ? '' : `<div class="summary">“${escapeHtml(row.replySummary)}”</div>`;
  return `<tr data-row="${index}"${row.frame >= 0 ? ` data-frame="${row.frame}"` : ''}><td>${row.step}</td><td>${escapeHtml(row.taskId)}</td><td><code>${escapeHtml(row.stateAfter ?? '—')}</code></td><td>${effect}${reply}</td><td>${tools}</td><td>${row.inputTokens} / ${row.outputTokens}</td><td>${usd(row.costUsd)}</td><td>${ms(row.latencyMs)}</td><td>${verdict}</td><td>${retries}</td></tr>`;
}

/** JSON inside a `<script>` block: `<` escaped so no string in the data can close the block. */
const scriptJson = (value: unknown) => JSON.stringify(value).replaceAll('<', '\\u003c');

/**
 * The complete page for one run.
 * @example
 * const html = viewerPage(layout, buildTimeline(trace, graph));
 */
export function viewerPage(layout: StatechartLayout, timeline: RunTimeline): string {
  const stop = timeline.stop;
  const stopHtml =
    stop === null
      ? '<div id="stop"><span class="badge">no run-end</span> <span id="stop-reason">The trace ends before the run did, so there is no stop reason.</span></div>'
      : `<div id="stop"><span class="badge ${escapeHtml(stop.status)}">${escapeHtml(stop.status)}</span> <span id="stop-reason"><code>${escapeHtml(stop.reason)}</code> — ${escapeHtml(stop.explanation)}</span><div class="meta" id="stop-detail">${escapeHtml(stop.detail)} · run-end totals: ${stop.steps} steps, ${stop.usage.inputTokens} in / ${stop.usage.outputTokens} out tokens, ${usd(stop.usage.costUsd)}, ${stop.usage.modelCalls} model calls, ${stop.usage.toolCalls} tool calls</div></div>`;
  const limitsNote = timeline.replayed
    ? 'Limits and thresholds are the ones the machine was started with, as its first event recorded them; "no limit" and "off" are values set to Infinity.'
    : 'Limits come from the run-start event; "no limit" is a limit set to Infinity.';
  const frames = timeline.frames.length - 1;
  return `<!doctype html>
<html lang="en"><head><meta charset="utf-8"><meta name="viewport" content="width=device-width, initial-scale=1">
<title>loopstate · ${escapeHtml(timeline.runId)}</title><style>${STYLE}</style></head>
<body>
<header>
  <h1>Run <code>${escapeHtml(timeline.runId)}</code></h1>
  <div class="meta"><span title="${escapeHtml(timeline.source)}">${escapeHtml(basename(timeline.source))}</span> · model ${escapeHtml(timeline.modelId ?? 'unknown')} · tasks ${escapeHtml(timeline.tasks.join(', ') || '—')} · goal “${escapeHtml(timeline.goalSummary ?? '—')}”</div>
  ${stopHtml}
</header>
<main>
  <section class="panel" id="chart-panel"><h2>Statechart <span class="meta">— blue: the run's path (n×: taken n times) · orange: the event at the slider · dashed: eventless · ■: a stop</span></h2>${statechartSvg(layout, timeline.edgeCounts)}</section>
  <aside id="side">
    <section class="panel" id="travel">
      <h2>Time travel</h2>
      <div class="slider-row"><button id="step-prev" aria-label="previous event">◀</button><input id="step-slider" type="range" min="0" max="${frames}" value="${frames}" aria-label="event"><button id="step-next" aria-label="next event">▶</button></div>
      <div class="meta" id="frame-caption"></div>
      <div>State: <span id="active-state"></span></div>
      <div id="frame-event"></div>
      <div class="meta">Task: <span id="frame-task"></span></div>
    </section>
    <section class="panel"><h2>Budgets</h2><table id="budgets"></table></section>
    <section class="panel"><h2>Retry counters <span class="meta">(this task, this call, this run)</span></h2><table id="counters"></table></section>
    <section class="panel"><h2>No-progress signals <span class="meta">(this task)</span></h2><table id="streaks"></table></section>
  </aside>
</main>
<section class="panel" id="steps-panel"><h2>Steps <span class="meta">— click a row to travel to it</span></h2>
<table id="step-table"><thead><tr><th>#</th><th>task</th><th>state after</th><th>effect</th><th>tool calls</th><th>tokens in / out</th><th>cost</th><th>latency</th><th>verdict</th><th>retries before</th></tr></thead>
<tbody>${timeline.steps.map(stepRowHtml).join('')}</tbody></table></section>
<section id="notes"><h2>How this view is derived</h2><ul>
<li>The statechart is drawn from the loop machine's own definition, laid out with elkjs.</li>
${
  timeline.replayed
    ? "<li>The slider moves over the machine events the trace recorded. They are replayed through the loop machine itself, from the input its first event recorded: every state, route, budget, counter and streak shown is the machine's own at that event.</li>"
    : "<li>This trace does not record the machine's events (it was written before they were, trace schema 1): the slider moves over the recorded state changes, each drawn as the shortest route the statechart allows between them, and the machine's budgets, counters and streaks are not shown. The run-end totals above are the run's own.</li>"
}
<li>${escapeHtml(limitsNote)}</li>
${[...timeline.notices, ...timeline.warnings.map((warning) => `run warning: ${warning}`)].map((notice) => `<li class="warn">${escapeHtml(notice)}</li>`).join('')}
</ul></section>
<script type="application/json" id="timeline-data">${scriptJson({ frames: timeline.frames, limits: timeline.limits, noProgress: timeline.noProgress, replayed: timeline.replayed })}</script>
<script>${VIEWER_SCRIPT}</script>
</body></html>`;
}
