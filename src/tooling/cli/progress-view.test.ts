import { describe, expect, it } from 'vitest';
import { createOrderLoop, goal as orderGoal, offlineOrderModel } from '../../../examples/order-status.js';
import { createToolFeedbackLoop, goal as toolFeedbackGoal } from '../../../examples/tool-feedback.js';
import {
  createWeeklyReportLoop,
  goal as weeklyGoal,
  offlineWeeklyReportModel,
} from '../../../examples/weekly-report.js';
import type { TraceEvent } from '../../index.js';
import {
  createProgressView,
  initialProgress,
  progressStep,
  renderStatusLine,
  type ProgressState,
} from './progress-view.js';

const fold = (events: readonly TraceEvent[]): ProgressState =>
  events.reduce((state, event) => progressStep(state, event).state, initialProgress());
const ESCAPE = '\u001B';
/** A retry event as traces written before argumentErrors have it. */
const withoutArgumentErrors = (event: TraceEvent): TraceEvent => {
  if (event.type !== 'retry') return event;
  const { argumentErrors: _dropped, ...older } = event;
  return older;
};
const ORDER_REPAIR = 'get_order_status: argument repair (order_id: expected an order id like O-100)';

describe('progress view: plain lines (not a TTY)', () => {
  it('prints one line per notable event and no control codes', async () => {
    const { trace } = await createWeeklyReportLoop(offlineWeeklyReportModel()).run({ goal: weeklyGoal });
    let written = '';
    const view = createProgressView({ write: (text) => (written += text), tty: false });
    for (const event of trace) view.onEvent(event);
    view.finish();
    expect(written).not.toContain(ESCAPE);
    expect(written).not.toContain('\r');
    const lines = written.trimEnd().split('\n');
    expect(lines[0]).toMatch(
      /^run run_\w+: model scripted, tasks classify → draft → format; budgets 8 steps, 2 reflections per task, 3 attempts per model call, \$1, 90\.0 s deadline$/,
    );
    expect(lines).toContain("  retry 1 (reflection: the evaluator's reason is fed back to the model)");
    expect(lines.filter((line) => line.startsWith('step '))).toHaveLength(5);
    expect(lines.find((line) => line.startsWith('  evaluation [draft]: failed (json)'))).toContain('not valid JSON');
    expect(lines.at(-1)).toBe('run ended: completed after 5 step(s)');
    expect(written.endsWith('step(s)\n\n')).toBe(true);
  });

  it('names the field error of an argument repair, and only the layer for a trace without it', async () => {
    const { trace } = await createOrderLoop(offlineOrderModel()).run({ goal: orderGoal });
    const linesOf = (events: readonly TraceEvent[]) => {
      let written = '';
      const view = createProgressView({ write: (text) => (written += text), tty: false });
      for (const event of events) view.onEvent(event);
      return written.split('\n');
    };
    const lines = linesOf(trace);
    expect(lines[lines.findIndex((line) => line.startsWith('step 1/4')) + 1]).toBe(
      `  retry 1 · ${ORDER_REPAIR}, sent back to the model`,
    );
    expect(linesOf(trace.map(withoutArgumentErrors))).toContain(
      '  retry 1 (argument repair: the field errors are sent back to the model)',
    );
  });

  it('lists each call of a repair, clipping a long field error', () => {
    const long = `note: ${'x'.repeat(300)}`;
    const { line, state } = progressStep(initialProgress(), {
      type: 'retry',
      runId: 'r',
      at: 0,
      taskId: 'main',
      step: 3,
      layer: 'argument_repair',
      counter: 2,
      delayMs: 0,
      argumentErrors: [
        { callId: 'c1', name: 'lookup_order', error: 'orderId: expected string matching /^O-\\d+$/' },
        { callId: 'c2', name: 'add_note', error: long },
      ],
    });
    expect(line).toMatch(
      /^ {2}retry 2 · lookup_order: argument repair \(orderId: expected string matching \/\^O-\\d\+\$\/\); add_note: argument repair \(note: x+…\), sent back to the model$/,
    );
    expect(state.argumentRepair?.length).toBeLessThan(250);
  });

  it('says when a circuit opens and when it half-opens', async () => {
    const { trace } = await createToolFeedbackLoop().run({ goal: toolFeedbackGoal });
    const lines: string[] = [];
    let state = initialProgress();
    for (const event of trace) {
      const step = progressStep(state, event);
      state = step.state;
      if (step.line !== null) lines.push(...step.line.split('\n'));
    }
    expect(lines).toContain('  circuit knowledge_base: open after 2 failures in a row; withheld while it cools down');
    expect(lines).toContain('  circuit knowledge_base: half-open; offered again on probation');
    expect(lines).toContain('  tool knowledge_base → error  (50 bytes, 300 ms)');
  });
});

describe('progress view: status line (TTY)', () => {
  it('renders state, step of max, tokens and cost against budgets, time against the deadline and the tool running', () => {
    const state: ProgressState = {
      ...initialProgress(),
      state: 'RUNNING.acting',
      taskId: 'draft',
      step: 2,
      maxSteps: 8,
      inputTokens: 1200,
      outputTokens: 80,
      costUsd: 0.0123,
      maxInputTokens: 50_000,
      maxOutputTokens: null,
      maxCostUsd: 0.5,
      deadlineMs: 90_000,
      runStartedAt: 0,
      lastAt: 1_500,
      runningTools: ['search'],
    };
    expect(renderStatusLine(state, 200)).toBe(
      'RUNNING.acting · step 2/8 [draft] · tokens 1200/50000 in, 80 out · $0.0123/$0.5 · 1.5 s/90.0 s · running search',
    );
    expect(renderStatusLine(state, 30)).toHaveLength(29);
    expect(renderStatusLine({ ...state, runningTools: [], streamedChars: 42 }, 200)).toMatch(/streaming 42 chars$/);
  });

  it('shows the field error of an argument repair until the repaired reply, with no tool running', async () => {
    const { trace } = await createOrderLoop(offlineOrderModel()).run({ goal: orderGoal });
    const repair = trace.findIndex((event) => event.type === 'retry');
    const repairedReply = trace.findIndex((event, index) => index > repair && event.type === 'step-end');
    const during = fold(trace.slice(0, repairedReply));
    expect(during).toMatchObject({ step: 2, runningTools: [], argumentRepair: ORDER_REPAIR });
    // The example runs on the real clock: the elapsed time is whatever the machine took.
    const line = renderStatusLine(during, 200).replace(/· \d+\.\d s\/30\.0 s ·/, '· <elapsed>/30.0 s ·');
    expect(line).toBe(
      `RUNNING.deciding · step 2/4 · tokens 180/200000 in, 22/20000 out · $0.0001/$0.05 · <elapsed>/30.0 s · ${ORDER_REPAIR}`,
    );
    expect(fold(trace.slice(0, repairedReply + 1)).argumentRepair).toBeNull();
    // A trace without the field: no field error to show, and the repaired call is not shown as running either.
    const older = fold(trace.slice(0, repairedReply).map(withoutArgumentErrors));
    expect(older).toMatchObject({ argumentRepair: null, runningTools: [] });
    expect(renderStatusLine(older, 200)).toMatch(/\d+\.\d s\/30\.0 s$/);
  });

  it('follows a run: the tool between its step and its result, usage from the events', async () => {
    const { trace } = await createToolFeedbackLoop().run({ goal: toolFeedbackGoal });
    const firstToolEnd = trace.findIndex((event) => event.type === 'tool-end');
    expect(fold(trace.slice(0, firstToolEnd)).runningTools).toEqual(['calculator']);
    const done = fold(trace);
    expect(done).toMatchObject({ state: 'TERMINATED', step: 14, maxSteps: 24, runningTools: [] });
    const end = trace.at(-1);
    expect(
      end?.type === 'run-end' && done.costUsd === end.usage.costUsd && done.inputTokens === end.usage.inputTokens,
    ).toBe(true);
  });

  it('redraws the status line in place, prints lines above it, and clears it at the end', async () => {
    const { trace } = await createWeeklyReportLoop(offlineWeeklyReportModel()).run({ goal: weeklyGoal });
    const writes: string[] = [];
    const view = createProgressView({ write: (text) => writes.push(text), tty: true, columns: 200 });
    for (const event of trace) view.onEvent(event);
    view.finish();
    const output = writes.join('');
    expect(output).toContain(`\r${ESCAPE}[2K`);
    expect(output).toContain('RUNNING.deciding · step 1/8 [classify]');
    expect(output).toContain('  retry 2 (reflection');
    // Every permanent line starts on a cleared line; the status line never ends with a newline.
    expect(
      writes
        .filter((text) => text.startsWith('RUNNING') || text.startsWith('READY'))
        .every((text) => !text.endsWith('\n')),
    ).toBe(true);
    expect(writes.at(-1)).toBe('run ended: completed after 5 step(s)\n\n');
  });

  it('prints the repair line above the status line, which carries the field error while the model repairs', async () => {
    const { trace } = await createOrderLoop(offlineOrderModel()).run({ goal: orderGoal });
    const writes: string[] = [];
    const view = createProgressView({ write: (text) => writes.push(text), tty: true, columns: 200 });
    for (const event of trace) view.onEvent(event);
    view.finish();
    expect(writes).toContain(`  retry 1 · ${ORDER_REPAIR}, sent back to the model\n`);
    expect(writes).toContain(
      `RUNNING.deciding · step 2/4 · tokens 180/200000 in, 22/20000 out · $0.0001/$0.05 · 0.0 s/30.0 s · ${ORDER_REPAIR}`,
    );
  });

  it('throttles redraws for streamed text', () => {
    let now = 0;
    const writes: string[] = [];
    const view = createProgressView({ write: (text) => writes.push(text), tty: true, now: () => now });
    const delta = (text: string): TraceEvent => ({
      type: 'model-delta',
      runId: 'r',
      at: 0,
      taskId: 'main',
      step: 1,
      text,
    });
    view.onEvent(delta('a'));
    const afterFirst = writes.length;
    view.onEvent(delta('b'));
    expect(writes.length).toBe(afterFirst);
    now = 100;
    view.onEvent(delta('c'));
    expect(writes.at(-1)).toMatch(/streaming 3 chars$/);
  });
});
