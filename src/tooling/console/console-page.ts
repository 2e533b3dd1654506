/**
 * The console's one HTML page: the store's runs a page at a time (with buttons to the next and previous
 * pages when there are more), refreshed every second, with what each waits for (calls
 * to approve with their redacted arguments, an output to review) and the buttons that decide it. The page
 * loads nothing from anywhere; every text from the store is put in with `textContent`, never as HTML.
 */
import { escapeHtml } from '../viewer/statechart-svg.js';
import { CONSOLE_SCRIPT } from './console-script.js';

const STYLE = `
:root { --ink: #1d2330; --muted: #6b7385; --line: #c9ceda; --bg: #f6f7fb; --accent: #2f6fde; }
* { box-sizing: border-box; }
body { margin: 0; font: 13px/1.45 system-ui, -apple-system, "Segoe UI", Roboto, sans-serif; color: var(--ink); background: var(--bg); }
header { padding: 14px 20px; background: #fff; border-bottom: 1px solid var(--line); display: flex; align-items: baseline; gap: 16px; flex-wrap: wrap; }
h1 { margin: 0; font-size: 17px; }
.meta, .muted { color: var(--muted); }
main { padding: 16px 20px; }
table { border-collapse: collapse; width: 100%; background: #fff; border: 1px solid var(--line); border-radius: 8px; }
th, td { text-align: left; padding: 6px 8px; border-bottom: 1px solid #eceef4; vertical-align: top; }
thead th { color: var(--muted); font-weight: 600; background: #fafbfd; }
.badge { display: inline-block; padding: 1px 8px; border-radius: 10px; font-weight: 600; background: #e6e9f2; white-space: nowrap; }
.badge.succeeded { background: #d3f9d8; color: #2b8a3e; } .badge.failed { background: #ffe3e3; color: #c92a2a; }
.badge.needs_human { background: #fff3bf; color: #a06000; } .badge.running { background: #dbe7ff; color: #1c4fb0; }
.pending { margin: 4px 0 8px; padding: 8px 10px; border: 1px solid #f0d98c; background: #fffbe8; border-radius: 6px; }
.pending pre { margin: 4px 0; padding: 6px 8px; background: #fff; border: 1px solid #eceef4; border-radius: 4px; white-space: pre-wrap; overflow-wrap: anywhere; max-height: 160px; overflow: auto; }
.decide { display: flex; gap: 6px; align-items: center; flex-wrap: wrap; }
.decide input { flex: 1; min-width: 200px; font: inherit; padding: 3px 6px; border: 1px solid var(--line); border-radius: 5px; }
button { font: inherit; padding: 3px 12px; border: 1px solid var(--line); background: #fff; border-radius: 5px; cursor: pointer; }
button.approve { border-color: #2b8a3e; color: #2b8a3e; font-weight: 600; } button.reject { border-color: #c92a2a; color: #c92a2a; }
button:disabled { opacity: 0.5; cursor: default; }
.message { margin-top: 4px; } .message.error { color: #c92a2a; font-weight: 600; } .message.info { color: #1c4fb0; }
a { color: var(--accent); }
code { font: 12px ui-monospace, SFMono-Regular, Menlo, monospace; }
#problems { color: #c92a2a; }
`;

/**
 * The console page; `store` and `loop` name what it shows (escaped).
 * @example
 * const html = consolePage({ store: 'loops.db', loop: 'refunds' });
 */
export function consolePage(about: { store: string; loop: string }): string {
  return `<!doctype html>
<html lang="en"><head><meta charset="utf-8"><meta name="viewport" content="width=device-width, initial-scale=1">
<title>loopstate console · ${escapeHtml(about.loop)}</title><style>${STYLE}</style></head>
<body>
<header>
  <h1>loopstate console</h1>
  <span class="meta">loop <code>${escapeHtml(about.loop)}</code> · store <code>${escapeHtml(about.store)}</code></span>
  <label class="meta">show <select id="status-filter"><option value="">all runs</option><option value="needs_human">needs_human</option><option value="running">running</option><option value="succeeded">succeeded</option><option value="failed">failed</option></select></label>
  <span class="meta" id="refreshed"></span>
</header>
<main>
  <div class="message" id="connection"></div>
  <table id="runs"><thead><tr><th>run</th><th>status</th><th>stop reason</th><th>goal</th><th>finished</th><th>waiting for / console</th></tr></thead><tbody></tbody></table>
  <p class="muted" id="empty" hidden>No runs in this store yet.</p>
  <p class="meta" id="paging"><button id="newer" hidden>‹ previous runs</button> <span id="page-note"></span> <button id="older" hidden>more runs ›</button></p>
  <ul id="problems"></ul>
  <p class="muted">Runs are listed by id, a page at a time, and refreshed every second. A decision continues the run through the loop's own resume, with the same checks; what it did is shown in its row. Arguments and outputs are shown with the loop's redaction.</p>
</main>
<script>${CONSOLE_SCRIPT}</script>
</body></html>`;
}
