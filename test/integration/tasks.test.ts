/**
 * Tasks (DESIGN §8): a hybrid workflow is a deterministic skeleton of bounded agent loops, each
 * with its own evaluator and retry counter. Modelled on seed 001's weekly report:
 * classify → draft → format.
 */
import { describe, expect, it } from 'vitest';
import { z } from 'zod';
import { evaluators, type TaskConfig } from 'loopstate';
import { modelError, reply, scriptedModel, toolCall } from 'loopstate/testing';
import { contentsWithRole, createTestLoop, recordingTool, requestAt } from './helpers.js';

const GOAL = 'Weekly report for the support team, week 12';
const classification = z.object({ category: z.enum(['incident', 'feature', 'chore']), count: z.number().int().min(0) });
const report = z.object({ title: z.string(), body: z.string() });

const CLASSIFIED = '{"category":"incident","count":3}';
const GOOD_DRAFT = 'Three incidents this week, all resolved within the SLA.';
const FORMATTED = '{"title":"Week 12","body":"Three incidents this week, all resolved within the SLA."}';

/** classify → draft → format; the draft prompt is built from the classification. */
function weeklyReportTasks(
  overrides: Partial<Record<'classify' | 'draft' | 'format', Partial<TaskConfig>>> = {},
): TaskConfig[] {
  return [
    {
      id: 'classify',
      prompt: 'Classify this week\'s tickets as JSON {"category","count"}.',
      evaluate: [evaluators.schema(classification)],
      ...overrides.classify,
    },
    {
      id: 'draft',
      prompt: ({ outputs }) => {
        const classified = outputs.classify as z.infer<typeof classification> | undefined;
        return classified
          ? `Draft one paragraph about ${classified.count} ${classified.category} ticket(s).`
          : 'Draft one paragraph about this week.';
      },
      evaluate: [
        evaluators.rule(
          (text: string) => text.length >= 40 || `the draft is ${text.length} characters; write at least 40`,
          'the draft is too short',
        ),
      ],
      ...overrides.draft,
    },
    {
      id: 'format',
      prompt: ({ outputs }) =>
        `Format as JSON {"title","body"}; body: ${typeof outputs.draft === 'string' ? outputs.draft : '(no draft)'}`,
      evaluate: [evaluators.schema(report)],
      ...overrides.format,
    },
  ];
}

describe('a three-task hybrid workflow', () => {
  it('runs each task with its own evaluator and retry counter, building prompts from earlier outputs', async () => {
    const model = scriptedModel([
      reply(CLASSIFIED),
      reply('Too short.'),
      reply(GOOD_DRAFT),
      reply('{"title":"Week 12"}'),
      reply(FORMATTED),
    ]);
    // maxRetries 1: the draft's reflection must not use up the format task's only retry.
    const { loop } = createTestLoop({
      model,
      tasks: weeklyReportTasks(),
      limits: { maxRetries: 1, maxTransportAttempts: 2 },
    });

    const result = await loop.run({ goal: GOAL });

    expect(result).toMatchObject({
      stopReason: 'completed',
      status: 'succeeded',
      detail: '3 of 3 task(s) passed evaluation',
      steps: 5,
    });
    expect(result.output).toEqual({ title: 'Week 12', body: GOOD_DRAFT });
    expect(result.taskOutputs).toEqual({
      classify: { category: 'incident', count: 3 },
      draft: GOOD_DRAFT,
      format: JSON.parse(FORMATTED),
    });
    expect(result.warnings).toEqual([]);
    model.assertComplete();

    // Each task starts a fresh conversation whose prompt carries the earlier outputs.
    const draftPrompt = requestAt(model, 1);
    expect(draftPrompt).toHaveLength(1);
    expect(draftPrompt[0]?.content).toContain('Current task (draft): Draft one paragraph about 3 incident ticket(s).');
    expect(draftPrompt[0]?.content).toContain(
      `Results of earlier tasks:\n{"classify":{"category":"incident","count":3}}`,
    );
    expect(requestAt(model, 3)[0]?.content).toContain(
      `Current task (format): Format as JSON {"title","body"}; body: ${GOOD_DRAFT}`,
    );

    // Reflections go to the task that failed, with that task's reason.
    expect(contentsWithRole(requestAt(model, 2), 'user').at(-1)).toContain(
      'the draft is 10 characters; write at least 40',
    );
    expect(contentsWithRole(requestAt(model, 4), 'user').at(-1)).toMatch(
      /did not pass evaluation: output does not match the schema: body: /,
    );
  });

  it('uses the loop-level evaluators for a task that has none of its own', async () => {
    const model = scriptedModel([reply('not json'), reply('{"ok":true}')]);
    const { loop } = createTestLoop({
      model,
      evaluate: [evaluators.json({ requiredFields: ['ok'] })],
      tasks: [{ id: 'only', prompt: 'Answer as JSON {"ok"}' }],
    });

    const result = await loop.run({ goal: GOAL });

    expect(result).toMatchObject({ stopReason: 'completed', output: { ok: true } });
    expect(contentsWithRole(requestAt(model, 1), 'user').at(-1)).toContain('output is not valid JSON');
  });

  it('counts steps and usage across all tasks against one run budget', async () => {
    const model = scriptedModel([reply(CLASSIFIED), reply(GOOD_DRAFT), reply(FORMATTED)]);
    const { loop } = createTestLoop({ model, tasks: weeklyReportTasks(), limits: { maxSteps: 2 } });

    const result = await loop.run({ goal: GOAL });

    expect(result).toMatchObject({ stopReason: 'max_steps', status: 'failed', steps: 2 });
    expect(result.taskOutputs).toEqual({ classify: { category: 'incident', count: 3 }, draft: GOOD_DRAFT });
    expect(model.remaining).toBe(1);
  });
});

describe('onFailure', () => {
  it("'continue' skips a failed task with a warning and runs the rest", async () => {
    const model = scriptedModel([
      reply(CLASSIFIED),
      reply('Short.'),
      reply('Still short.'),
      reply('{"title":"Week 12","body":"No draft this week."}'),
    ]);
    const { loop } = createTestLoop({
      model,
      tasks: weeklyReportTasks({ draft: { onFailure: 'continue' } }),
      limits: { maxRetries: 1, maxTransportAttempts: 2 },
    });

    const result = await loop.run({ goal: GOAL });

    expect(result).toMatchObject({
      stopReason: 'completed',
      status: 'succeeded',
      detail: '2 of 3 task(s) passed evaluation',
    });
    expect(result.output).toEqual({ title: 'Week 12', body: 'No draft this week.' });
    expect(result.taskOutputs).toEqual({
      classify: { category: 'incident', count: 3 },
      format: { title: 'Week 12', body: 'No draft this week.' },
    });
    expect(result.warnings).toEqual([
      expect.stringMatching(
        /^task draft failed \(retries_exhausted: task draft: evaluation still failing after 1 reflection retries: .*\) and was skipped \(onFailure: continue\)$/,
      ),
    ]);
    // The next task's prompt saw no draft.
    expect(requestAt(model, 3)[0]?.content).toContain('body: (no draft)');
    model.assertComplete();
  });

  it("'stop' (the default) ends the run with the task's failure reason and the best partial output", async () => {
    const model = scriptedModel([reply(CLASSIFIED), reply('Short.'), reply('Still short.'), reply('never requested')]);
    const { loop } = createTestLoop({
      model,
      tasks: weeklyReportTasks(),
      limits: { maxRetries: 1, maxTransportAttempts: 2 },
    });

    const result = await loop.run({ goal: GOAL });

    expect(result).toMatchObject({ stopReason: 'retries_exhausted', status: 'failed', steps: 3 });
    expect(result.detail).toBe(
      'task draft: evaluation still failing after 1 reflection retries: the draft is 12 characters; write at least 40; raise limits.maxRetries',
    );
    expect(result.output).toBe('Still short.');
    expect(result.taskOutputs).toEqual({ classify: { category: 'incident', count: 3 } });
    expect(result.warnings).toEqual([expect.stringContaining('partial output: the run stopped (retries_exhausted)')]);
    expect(model.remaining).toBe(1);
  });

  it("'continue' on the last task still stops the run with that task's failure", async () => {
    const model = scriptedModel([reply(CLASSIFIED), reply(GOOD_DRAFT), reply('nope'), reply('still nope')]);
    const { loop } = createTestLoop({
      model,
      tasks: weeklyReportTasks({ format: { onFailure: 'continue' } }),
      limits: { maxRetries: 1, maxTransportAttempts: 2 },
    });

    const result = await loop.run({ goal: GOAL });

    expect(result).toMatchObject({
      stopReason: 'retries_exhausted',
      status: 'failed',
      output: null,
      rawOutput: 'still nope',
    });
    expect(result.detail).toMatch(/^task format: /);
    expect(Object.keys(result.taskOutputs)).toEqual(['classify', 'draft']);
    model.assertComplete();
  });

  it("a task whose transport retries run out is skipped under 'continue'; the next task has its own counter", async () => {
    const { tool } = recordingTool({ name: 'ticket_search', respond: () => ({ tickets: 3 }) });
    const model = scriptedModel([
      toolCall('ticket_search', { id: 'week-12' }),
      reply(CLASSIFIED),
      modelError({ status: 503 }),
      modelError({ status: 503 }),
      modelError({ status: 503 }),
      reply(FORMATTED),
    ]);
    const { loop } = createTestLoop({
      model,
      tools: [tool],
      tasks: weeklyReportTasks({ draft: { onFailure: 'continue' } }),
      limits: { maxTransportAttempts: 2 },
    });

    const result = await loop.run({ goal: GOAL });

    expect(result).toMatchObject({ stopReason: 'completed', detail: '2 of 3 task(s) passed evaluation', steps: 3 });
    expect(result.warnings).toEqual([
      expect.stringMatching(
        /^task draft failed \(retries_exhausted: task draft: 2nd consecutive transport failure of model call 3 \(HTTP 503\); raise limits.maxTransportAttempts \(2\)/,
      ),
    ]);
    // Two failed calls in draft, one retried failure in format: failures count as model calls.
    expect(result.usage).toMatchObject({ modelCalls: 6, toolCalls: 1 });
    // The classify task's tool results stay in its own conversation.
    expect(requestAt(model, 2).some((message) => message.role === 'tool')).toBe(false);
    model.assertComplete();
  });
});

describe('onFailure continue and run-level failures', () => {
  it('a fatal model error (HTTP 401) stops the run even when the task says onFailure: continue', async () => {
    const model = scriptedModel([reply(CLASSIFIED), modelError({ status: 401 }), reply(FORMATTED)]);
    const { loop } = createTestLoop({ model, tasks: weeklyReportTasks({ draft: { onFailure: 'continue' } }) });

    const result = await loop.run({ goal: GOAL });

    expect(result).toMatchObject({ stopReason: 'fatal_error', status: 'failed' });
    expect(result.error).toMatchObject({ name: 'ModelCallError', code: 'model_auth' });
    expect(model.calls).toHaveLength(2);
  });
});
