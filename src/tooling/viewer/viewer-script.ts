/**
 * The viewer page's own script, inlined into the page (the page loads nothing from anywhere). Plain
 * browser JavaScript: it reads the timeline from the page's JSON block and, as the slider moves, marks
 * the active state and the route just taken, and fills the budget, counter and no-progress panels from
 * the machine context the frame replayed.
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
  const row = (label, spent, limit, format, title) => {
    let limitText = limit.none ? '—' : 'not recorded';
    let ratio = null;
    if (limit.known) {
      limitText = limit.value === null ? (limit.off || 'no limit') : format(limit.value);
      if (limit.value !== null && limit.value > 0) ratio = Math.min(1, spent / limit.value);
    }
    const bar = ratio === null ? '' : '<div class="bar"><div class="fill' + (ratio >= 1 ? ' full' : ratio >= 0.8 ? ' high' : '') + '" style="width:' + (ratio * 100).toFixed(1) + '%"></div></div>';
    return '<tr><th scope="row"' + (title ? ' title="' + esc(title) + '"' : '') + '>' + esc(label) + '</th><td class="spent">' + esc(format(spent)) + '</td><td class="limit">' + esc(limitText) + '</td><td class="meter">' + bar + '</td></tr>';
  };
  const notRecorded = (columns) => '<tbody><tr><td colspan="' + columns + '" class="muted">not in this trace: it does not record the machine\'s events (trace schema 1)</td></tr></tbody>';
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
      : '<code>' + esc(frame.event) + '</code>: ' + esc(frame.from) + ' → ' + esc(frame.state) + (frame.routeFound ? (frame.routeExact ? '' : ' <span class="muted">(shortest route between the recorded states)</span>') : ' <span class="warn">(route not found in this statechart)</span>');
    $('frame-task').textContent = frame.taskId ?? '—';
    const c = frame.context;
    if (c === null) {
      $('budgets').innerHTML = head + '<tbody>' + row('Elapsed', frame.elapsedMs, limitOf(limits, 'deadlineMs'), fmtMs) + '</tbody>' + notRecorded(4);
      $('counters').innerHTML = notRecorded(4);
      $('streaks').innerHTML = notRecorded(4);
    } else {
      const u = c.usage;
      $('budgets').innerHTML = head + '<tbody>' +
        row('Steps (model decisions)', c.steps, limitOf(limits, 'maxSteps'), fmtInt) +
        row('Input tokens', u.inputTokens, limitOf(limits, 'maxInputTokens'), fmtInt) +
        row('Output tokens', u.outputTokens, limitOf(limits, 'maxOutputTokens'), fmtInt) +
        row('Cost', u.costUsd, limitOf(limits, 'maxCostUsd'), fmtUsd) +
        row('Model calls', u.modelCalls, { known: false, none: true }, fmtInt, 'decisions, failed attempts, LLM judges and context summaries') +
        row('Tool calls', u.toolCalls, limitOf(limits, 'maxToolCalls'), fmtInt) +
        row('Elapsed', frame.elapsedMs, limitOf(limits, 'deadlineMs'), fmtMs) + '</tbody>';
      $('counters').innerHTML = head + '<tbody>' +
        row('Steps this task', c.task.steps, limitOf(limits, 'maxStepsPerTask'), fmtInt) +
        row('Reflection retries', c.task.reflectionRetries, limitOf(limits, 'maxRetries'), fmtInt, 'rejected answers fed back with the reason, this task') +
        row('Argument repairs', c.task.argumentRepairs, limitOf(limits, 'maxArgumentRepairs'), fmtInt, 'replies with invalid tool arguments sent back to fix, this task') +
        row('Failed attempts, this call', c.transport.consecutiveFailures, limitOf(limits, 'maxTransportAttempts'), fmtInt, 'transport failures of the current model call in a row; a reply starts the next call afresh') +
        row('Transport retries, run', c.transport.retries, limitOf(limits, 'maxTransportRetries'), fmtInt, 'every call\'s transport retries, summed over the run') + '</tbody>';
      const p = c.progress;
      const off = (key) => Object.assign(limitOf(thresholds, key), { off: 'off' });
      $('streaks').innerHTML = head + '<tbody>' +
        row('Same call, same result', p.repeatCount, off('repeatedToolCall'), fmtInt, 'most times one (tool, arguments, result) was seen this task, as of the last round' + (p.repeatedTool ? ': ' + p.repeatedTool : '')) +
        row('Rounds of seen results', p.duplicateObservationStreak, off('duplicateObservation'), fmtInt, 'tool rounds in a row that only brought results already seen') +
        row('Unchanged state', p.unchangedStateStreak, off('unchangedState'), fmtInt, 'decisions in a row with the same state digest') +
        row('Same parse error', p.sameParseErrorStreak, off('sameParseError'), fmtInt) +
        row('Same rejection', p.sameReasonStreak, off('sameEvaluatorReason'), fmtInt, 'rejections in a row with the same reason for the same output') +
        (p.planActive ? row('Plan stalled', p.planStallSteps, off('planStall'), fmtInt, 'decisions since a plan item was completed or removed') : '') +
        '<tr><th scope="row">Nudged</th><td colspan="3">' + (p.nudgedAtStep === null ? '<span class="muted">not yet</span>' : 'at step ' + p.nudgedAtStep + ' (' + esc(p.lastSignal) + ')') + '</td></tr></tbody>';
    }
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
