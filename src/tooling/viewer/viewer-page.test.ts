import { describe, expect, it } from 'vitest';
import { loopMachine } from '../../../machines/index.js';
import { DEFAULT_LIMITS } from '../../index.js';
import { pickRun } from './read-trace.js';
import { buildTimeline } from './run-timeline.js';
import { statechartGraph } from './statechart-graph.js';
import { shippedStatechartLayout } from './shipped-statechart-layout.js';
import { viewerPage } from './viewer-page.js';

const hostile = '</script><script>alert(1)</script><img src=x>';
const lines = [
  {
    type: 'run-start',
    runId: 'r<1>',
    at: 0,
    schemaVersion: 1,
    goalSummary: hostile,
    tasks: ['main'],
    modelId: 'm',
    promptVersion: 'p',
    limits: JSON.parse(JSON.stringify(DEFAULT_LIMITS)) as unknown,
  },
  { type: 'transition', runId: 'r<1>', at: 0, event: 'run.started', from: 'READY', to: 'RUNNING.deciding' },
  {
    type: 'step-end',
    runId: 'r<1>',
    at: 5,
    step: 1,
    taskId: 'main',
    modelId: 'm',
    latencyMs: 5,
    inputTokens: 1,
    outputTokens: 1,
    costUsd: 0,
    decision: 'final',
    toolCalls: [],
    replySummary: hostile,
  },
  {
    type: 'transition',
    runId: 'r<1>',
    at: 5,
    event: 'model.responded',
    from: 'RUNNING.deciding',
    to: 'RUNNING.evaluating',
  },
];

describe('viewerPage', () => {
  it('escapes every recorded string, in the markup and in the inline data', async () => {
    const graph = statechartGraph(loopMachine);
    const html = viewerPage(
      shippedStatechartLayout(),
      buildTimeline(pickRun(lines.map((line) => JSON.stringify(line)).join('\n'), 'x.jsonl'), graph),
    );
    expect(html).not.toContain('<script>alert(1)');
    expect(html).not.toContain('<img src=x>');
    expect(html).toContain('&lt;/script&gt;&lt;script&gt;alert(1)');
    // Exactly the page's own two script blocks.
    expect(html.match(/<script/g)).toHaveLength(2);
    // No run-end yet: said so instead of a stop reason.
    expect(html).toContain('The trace ends before the run did');
    expect(html).not.toMatch(/(src|href)=["']?https?:/);
  });

  it("shows a repaired call's field error in the step table, escaped", async () => {
    const graph = statechartGraph(loopMachine);
    const repair = [
      lines[0],
      lines[1],
      {
        ...lines[2],
        decision: 'tool_calls',
        toolCalls: [{ callId: 'c1', name: 'lookup', argumentsSummary: '{"id":7}' }],
        replySummary: null,
      },
      { ...lines[3], to: 'RUNNING.deciding' },
      {
        type: 'retry',
        runId: 'r<1>',
        at: 5,
        taskId: 'main',
        step: 1,
        layer: 'argument_repair',
        counter: 1,
        delayMs: 0,
        argumentErrors: [{ callId: 'c1', name: 'lookup', error: `id: ${hostile}` }],
      },
    ];
    const html = viewerPage(
      shippedStatechartLayout(),
      buildTimeline(pickRun(repair.map((line) => JSON.stringify(line)).join('\n'), 'x.jsonl'), graph),
    );
    expect(html).toContain('not run</span> <span class="summary">(arguments sent back: id: &lt;/script&gt;');
    expect(html).not.toContain('<img src=x>');
  });
});
