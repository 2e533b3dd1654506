/**
 * The console page's own script, inlined into it: polls `/api/runs` with the token the page was opened
 * with, draws each run's row only when it changed (a reason being typed is kept), and posts decisions.
 * Text from the store goes in through `textContent` only.
 */
export const CONSOLE_SCRIPT = String.raw`
(() => {
  const token = new URLSearchParams(location.search).get('token') || '';
  const $ = (id) => document.getElementById(id);
  const tbody = document.querySelector('#runs tbody');
  const drawn = new Map();
  const messages = new Map();
  // Paging: the run id the shown page starts after (null: the first page), and those of the pages before it.
  let after = null;
  const before = [];
  const currentQuery = () => {
    const query = new URLSearchParams();
    if ($('status-filter').value) query.set('status', $('status-filter').value);
    if (after !== null) query.set('after', after);
    return query.toString();
  };
  const el = (tag, props, children) => {
    const node = document.createElement(tag);
    for (const [key, value] of Object.entries(props || {})) {
      if (key === 'text') node.textContent = value;
      else if (key === 'className') node.className = value;
      else node.setAttribute(key, value);
    }
    for (const child of children || []) if (child) node.appendChild(child);
    return node;
  };
  const pretty = (value) => typeof value === 'string' ? value : JSON.stringify(value, null, 2);

  async function decide(runId, body, row) {
    row.querySelectorAll('button').forEach((button) => (button.disabled = true));
    messages.set(runId, { kind: 'info', text: 'sending…' });
    redraw(runId);
    let answer;
    try {
      const response = await fetch('/api/runs/' + encodeURIComponent(runId) + '/actions', {
        method: 'POST',
        headers: { 'content-type': 'application/json', 'x-loopstate-token': token },
        body: JSON.stringify(body),
      });
      answer = { ok: response.ok, json: await response.json().catch(() => null) };
    } catch (error) {
      answer = { ok: false, json: { error: { code: 'network', message: String(error) } } };
    }
    if (answer.ok) messages.set(runId, { kind: 'info', text: 'decision sent: the run is continuing…' });
    else {
      const error = (answer.json && answer.json.error) || { code: 'unknown', message: 'the console did not say why' };
      messages.set(runId, { kind: 'error', text: error.code + ': ' + error.message, code: error.code });
    }
    drawn.delete(runId);
    refresh();
  }

  function pendingBlocks(run, row) {
    const blocks = [];
    for (const call of run.pendingApprovals) {
      const reason = el('input', { type: 'text', placeholder: 'reason (needed to reject; the model reads it)', 'data-reason': call.callId });
      const approve = el('button', { className: 'approve', text: 'Approve', 'data-action': 'approve', 'data-call': call.callId });
      const reject = el('button', { className: 'reject', text: 'Reject', 'data-action': 'reject', 'data-call': call.callId });
      approve.addEventListener('click', () => decide(run.runId, { kind: 'approve', callId: call.callId, argumentsHash: call.argumentsHash }, row));
      reject.addEventListener('click', () => {
        if (reason.value.trim() === '') { messages.set(run.runId, { kind: 'error', text: 'a rejection needs a reason: the model reads it' }); redraw(run.runId); return; }
        decide(run.runId, { kind: 'reject', callId: call.callId, reason: reason.value, argumentsHash: call.argumentsHash }, row);
      });
      blocks.push(el('div', { className: 'pending', 'data-pending-call': call.callId }, [
        el('div', {}, [el('b', { text: 'approve ' }), el('code', { text: call.tool }), el('span', { className: 'muted', text: ' call ' + call.callId + (call.expiresAt ? ' · expires ' + new Date(call.expiresAt).toLocaleString() : '') })]),
        el('pre', { className: 'args', text: pretty(call.args) }),
        el('div', { className: 'decide' }, [approve, reason, reject]),
      ]));
    }
    const review = run.pendingReview;
    if (review) {
      const reason = el('input', { type: 'text', placeholder: 'what to fix (needed to reject)', 'data-reason': 'review' });
      const accept = el('button', { className: 'approve', text: 'Accept', 'data-action': 'accept' });
      const reject = el('button', { className: 'reject', text: 'Reject', 'data-action': 'reject-output' });
      accept.addEventListener('click', () => decide(run.runId, { kind: 'accept', outputHash: review.outputHash, reviewId: review.reviewId }, row));
      reject.addEventListener('click', () => {
        if (reason.value.trim() === '') { messages.set(run.runId, { kind: 'error', text: 'a rejected output needs a reason: the model reads it' }); redraw(run.runId); return; }
        decide(run.runId, { kind: 'reject-output', reason: reason.value, outputHash: review.outputHash, reviewId: review.reviewId }, row);
      });
      blocks.push(el('div', { className: 'pending', 'data-pending-review': review.reviewId }, [
        el('div', {}, [el('b', { text: 'review the output of task ' }), el('code', { text: review.taskId }), el('span', { className: 'muted', text: ' (' + review.evaluator + ': ' + review.reason + ')' })]),
        el('pre', { className: 'output', text: pretty(review.rawOutput) }),
        el('div', { className: 'decide' }, [accept, reason, reject]),
      ]));
    }
    return blocks;
  }

  function activityText(activity) {
    if (!activity) return null;
    if (activity.state === 'continuing') return { kind: 'info', text: activity.action + ': running…' };
    if (activity.state === 'refused') return { kind: 'error', text: activity.action + ' refused: ' + activity.code + ': ' + activity.message };
    return { kind: 'info', text: activity.action + ' done: ' + (activity.status ? activity.status + ' (' + activity.stopReason + ') — ' : '') + activity.detail };
  }

  const runs = new Map();
  function rowOf(run) {
    const row = el('tr', { 'data-run': run.runId });
    const link = el('a', { href: '/runs/' + encodeURIComponent(run.runId) + '?token=' + encodeURIComponent(token), text: run.runId, target: '_blank', rel: 'noopener' });
    const side = el('td', { className: 'side' }, pendingBlocks(run, row));
    for (const note of [activityText(run.activity), messages.get(run.runId)]) if (note) side.appendChild(el('div', { className: 'message ' + note.kind, text: note.text }));
    if (side.childNodes.length === 0) side.appendChild(el('span', { className: 'muted', text: '—' }));
    row.append(
      el('td', {}, [el('code', {}, [link])]),
      el('td', {}, [el('span', { className: 'badge ' + run.status, text: run.status })]),
      el('td', {}, [el('code', { text: run.stopReason || '—' })]),
      el('td', { text: run.goal || '—' }),
      el('td', { className: 'muted', text: run.finishedAt ? new Date(run.finishedAt).toLocaleString() : '—' }),
      side,
    );
    return row;
  }
  function redraw(runId) {
    const run = runs.get(runId);
    const old = tbody.querySelector('tr[data-run="' + CSS.escape(runId) + '"]');
    if (run && old) old.replaceWith(rowOf(run));
    drawn.delete(runId);
  }

  async function refresh() {
    let page;
    try {
      const asked = currentQuery();
      const response = await fetch('/api/runs' + (asked ? '?' + asked : ''), { headers: { 'x-loopstate-token': token } });
      page = await response.json();
      // A page asked for before the filter or the page changed is not drawn.
      if (asked !== currentQuery()) return;
      if (!response.ok) throw new Error((page.error && page.error.code + ': ' + page.error.message) || response.status);
      $('connection').textContent = '';
    } catch (error) {
      $('connection').className = 'message error';
      $('connection').textContent = 'cannot read the runs: ' + error.message;
      return;
    }
    const seen = new Set();
    let previous = null;
    for (const run of page.runs) {
      seen.add(run.runId);
      runs.set(run.runId, run);
      // Once the server reports on the decision, its own words replace "sent"; an error stays until replaced.
      if (run.activity && (messages.get(run.runId) || {}).kind === 'info') messages.delete(run.runId);
      const key = JSON.stringify([run, messages.get(run.runId) || null]);
      let row = tbody.querySelector('tr[data-run="' + CSS.escape(run.runId) + '"]');
      if (!row || drawn.get(run.runId) !== key) {
        const fresh = rowOf(run);
        if (row) {
          // A reason being typed survives the redraw.
          row.querySelectorAll('input[data-reason]').forEach((input) => {
            const same = fresh.querySelector('input[data-reason="' + CSS.escape(input.dataset.reason) + '"]');
            if (same) same.value = input.value;
          });
          row.replaceWith(fresh);
        }
        row = fresh;
        drawn.set(run.runId, key);
      }
      if (previous === null ? tbody.firstElementChild !== row : previous.nextElementSibling !== row) {
        if (previous === null) tbody.prepend(row); else previous.after(row);
      }
      previous = row;
    }
    tbody.querySelectorAll('tr[data-run]').forEach((row) => { if (!seen.has(row.dataset.run)) { row.remove(); drawn.delete(row.dataset.run); } });
    $('empty').hidden = page.runs.length > 0 || after !== null;
    $('older').hidden = !page.next;
    $('newer').hidden = after === null;
    $('older').dataset.next = page.next || '';
    $('page-note').textContent = after === null && !page.next ? '' : 'page ' + (before.length + 1) + (page.next ? ' · more runs exist' : ' · the last page');
    $('problems').replaceChildren(...page.unreadable.map((run) => el('li', { text: 'run ' + run.runId + ' cannot be read: ' + run.problem })));
    $('refreshed').textContent = page.runs.length + ' runs' + (page.next || after !== null ? ' on this page' : '') + ' · refreshed ' + new Date().toLocaleTimeString();
  }

  $('older').addEventListener('click', () => {
    if (!$('older').dataset.next) return;
    before.push(after);
    after = $('older').dataset.next;
    refresh();
  });
  $('newer').addEventListener('click', () => {
    after = before.length > 0 ? before.pop() : null;
    refresh();
  });
  $('status-filter').addEventListener('change', () => {
    after = null;
    before.length = 0;
    refresh();
  });
  refresh();
  setInterval(refresh, 1000);
})();
`;
