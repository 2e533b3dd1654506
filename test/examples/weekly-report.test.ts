import { describe, expect, it } from 'vitest';
import { createWeeklyReportLoop, goal, offlineWeeklyReportModel } from '../../examples/weekly-report.js';
import { rebuildRun } from '../../src/engine/trace/rebuild-run.js';

describe('weekly-report example (seed 001)', () => {
  it('runs classify → draft → format; the draft fails twice as non-JSON and passes on the third attempt with the reasons fed back', async () => {
    const model = offlineWeeklyReportModel();
    const result = await createWeeklyReportLoop(model).run({ goal });
    expect(result).toMatchObject({
      status: 'succeeded',
      stopReason: 'completed',
      detail: '3 of 3 task(s) passed evaluation',
      steps: 5,
    });
    expect(typeof result.output === 'string' && result.output.startsWith('# 周报')).toBe(true);
    const verdicts = result.trace.flatMap((event) =>
      event.type === 'evaluation-end' ? [[event.taskId, event.passed, event.evaluator]] : [],
    );
    expect(verdicts).toEqual([
      ['classify', true, null],
      ['draft', false, 'json'],
      ['draft', false, 'json'],
      ['draft', true, null],
      ['format', true, null],
    ]);
    const retries = result.trace.filter((event) => event.type === 'retry');
    expect(retries.map((event) => [event.taskId, event.layer, event.counter])).toEqual([
      ['draft', 'reflection', 1],
      ['draft', 'reflection', 2],
    ]);
    expect(rebuildRun(result.trace).retries).toEqual({ transport: 0, reflection: 2, argument_repair: 0 });
    // The feedback is visible to the model: the third draft request carries the evaluator's reason.
    const thirdDraft = model.calls[3]?.messages.map((message) => message.content ?? '').join('\n') ?? '';
    expect(thirdDraft).toContain('not valid JSON');
  });
});
