/**
 * The viewer page's own script, inlined into the page (the page loads nothing from anywhere). Plain
 * browser JavaScript: it reads the timeline from the page's JSON block and, as the slider moves, marks
 * the active state and the route just taken, and fills the budget, counter and streak panels.
 */
export const VIEWER_SCRIPT = String.raw`
(() => {
  const data = JSON.parse(document.getElementById('timeline-data').textContent);
  const frames = data.frames;
  const slider = document.getElementById('step-slider');
  const $ = (id) => document.getElementById(id);
  const esc = (value) => String(value).replace(/[&<>"']/g, (c) => ({ '&': '&amp;', '<': '&lt;', '>': '&gt;', '"': '&quot;', "'": '&#39;' })[c]);
  const limits = data.limits;
  const thresholds = data.noProgress;
  const fmtInt = (n) => Math.round(n).toLocaleString('en-US');
  const fmtUsd = (n) => '$' + n.toFixed(n < 0.01 ? 6 : 4);
  const fmtMs = (n) => (n >= 1000 ? (n / 1000).toFixed(2) + ' s' : Math.round(n) + ' ms');
  const limitOf = (source, key) => {
    if (source === null || source === undefined) return { known: false };
    if (!Object.prototype.hasOwnProperty.call(source, key)) return { known: false };
    return { known: true, value: source[key] };
  };
  const row = (label, spent, limit, format, note) => {
    let limitText = 'not recorded';
    let ratio = null;
    if (limit.known) {
      limitText = limit.value === null ? 'no limit' : format(limit.value);
      if (limit.value !== null && limit.value > 0) ratio = Math.min(1, spent / limit.value);
    }
    const bar = ratio === null ? '' : '<div class="bar"><div class="fill' + (ratio >= 1 ? ' full' : ratio >= 0.8 ? ' high' : '') + '" style="width:' + (ratio * 100).toFixed(1) + '%"></div></div>';
    return '<tr><th scope="row">' + esc(label) + (note ? ' <span class="derived" title="' + esc(note) + '">derived</span>' : '') + '</th><td class="spent">' + esc(format(spent)) + '</td><td class="limit">' + esc(limitText) + '</td><td class="meter">' + bar + '</td></tr>';
  };
  const head = '<thead><tr><th></th><th>now</th><th>limit</th><th></th></tr></thead>';

  function show(index) {
    const frame = frames[index];
    slider.value = String(index);
    document.querySelectorAll('#statechart .state.active, #statechart .state.active-parent').forEach((el) => el.classList.remove('active', 'active-parent'));
    document.querySelectorAll('#statechart .edge.current').forEach((el) => el.classList.remove('current'));
    const node = document.querySelector('#statechart [data-state="' + CSS.escape(frame.state) + '"]');
    if (node) node.classList.add('active');
    const parts = frame.state.split('.');
    for (let i = parts.length - 1; i > 0; i--) {
      const parent = document.querySelector('#statechart [data-state="' + CSS.escape(parts.slice(0, i).join('.')) + '"]');
      if (parent) parent.classList.add('active-parent');
    }
    for (const edge of frame.route) {
      const el = document.querySelector('#statechart [data-edge="' + CSS.escape(edge) + '"]');
      if (el) el.classList.add('current');
    }
    $('frame-caption').textContent = 'Event ' + index + ' of ' + (frames.length - 1) + ' · +' + fmtMs(frame.elapsedMs);
    $('active-state').textContent = frame.state;
    $('frame-event').innerHTML = frame.event === null
      ? 'the run has started; nothing has happened yet'
      : '<code>' + esc(frame.event) + '</code>: ' + esc(frame.from) + ' → ' + esc(frame.state) + (frame.routeFound ? '' : ' <span class="warn">(route not found in this statechart)</span>');
    $('frame-task').textContent = frame.taskId ?? '—';
    const u = frame.usage;
    $('budgets').innerHTML = head + '<tbody>' +
      row('Steps (model decisions)', frame.steps, limitOf(limits, 'maxSteps'), fmtInt) +
      row('Input tokens', u.inputTokens, limitOf(limits, 'maxInputTokens'), fmtInt, 'summed from step-end events') +
      row('Output tokens', u.outputTokens, limitOf(limits, 'maxOutputTokens'), fmtInt, 'summed from step-end events') +
      row('Cost', u.costUsd, limitOf(limits, 'maxCostUsd'), fmtUsd, 'summed from step-end events') +
      row('Tool calls', u.toolCalls, limitOf(limits, 'maxToolCalls'), fmtInt, 'counted from tool-end events') +
      row('Elapsed', frame.elapsedMs, limitOf(limits, 'deadlineMs'), fmtMs) + '</tbody>';
    const c = frame.counters;
    $('counters').innerHTML = head + '<tbody>' +
      row('Transport retries', c.transportRetries, limitOf(limits, 'maxTransportRetries'), fmtInt, 'model.failed transitions into RETRY.backingOff, this task; the limit is the run-wide maxTransportRetries, and each call has maxTransportAttempts attempts of its own') +
      row('Reflection retries', c.reflectionRetries, limitOf(limits, 'maxRetries'), fmtInt, 'rejected answers routed through RETRY.reflecting, this task') +
      row('Argument repairs', c.argumentRepairs, limitOf(limits, 'maxArgumentRepairs'), fmtInt, 'decisions routed through RUNNING.repairingArguments, this task') + '</tbody>';
    const s = frame.streaks;
    $('streaks').innerHTML = head + '<tbody>' +
      row('Same call, same result', s.repeatedToolCall, limitOf(thresholds, 'repeatedToolCall'), fmtInt, 'most times one (tool, argument summary, result id) was seen this task') +
      row('Rounds of seen results', s.duplicateObservation, limitOf(thresholds, 'duplicateObservation'), fmtInt, 'consecutive tool rounds bringing only results already seen') +
      row('Same parse error', s.sameParseError, limitOf(thresholds, 'sameParseError'), fmtInt, 'consecutive unparseable decisions') +
      row('Same rejection', s.sameEvaluatorReason, limitOf(thresholds, 'sameEvaluatorReason'), fmtInt, 'consecutive rejections with the same reason for the same reply') +
      '<tr><th scope="row">Unchanged state</th><td colspan="3" class="muted">not in the trace (its digest is not recorded)</td></tr>' +
      '<tr><th scope="row">Nudged</th><td colspan="3">' + (s.nudge ? 'at step ' + s.nudge.step + ' (' + esc(s.nudge.signal) + ')' : '<span class="muted">not yet</span>') + '</td></tr></tbody>';
    document.querySelectorAll('#step-table tbody tr').forEach((tr) => tr.classList.toggle('current', Number(tr.dataset.row) === frame.stepRow));
  }

  slider.addEventListener('input', () => show(Number(slider.value)));
  $('step-prev').addEventListener('click', () => show(Math.max(0, Number(slider.value) - 1)));
  $('step-next').addEventListener('click', () => show(Math.min(frames.length - 1, Number(slider.value) + 1)));
  document.querySelectorAll('#step-table tbody tr[data-frame]').forEach((tr) => tr.addEventListener('click', () => show(Number(tr.dataset.frame))));
  document.addEventListener('keydown', (event) => {
    if (event.target === slider) return;
    if (event.key === 'ArrowRight') show(Math.min(frames.length - 1, Number(slider.value) + 1));
    if (event.key === 'ArrowLeft') show(Math.max(0, Number(slider.value) - 1));
  });
  show(frames.length - 1);
})();
`;
