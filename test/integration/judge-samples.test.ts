import { describe, expect, it } from 'vitest';
import { evaluators, LoopConfigError } from 'loopstate';
import { reply, scriptedModel } from 'loopstate/testing';
import { createTestLoop } from './helpers.js';

const GOAL = 'Who owns the incident?';
const verdict = (passed: boolean, reason: string, score?: number) =>
  reply(JSON.stringify({ passed, reason, ...(score === undefined ? {} : { score }) }), {
    usage: { inputTokens: 100, outputTokens: 10 },
  });

describe('evaluators.judge with samples', () => {
  it('a 2-of-3 majority passes; every sample is called and counted', async () => {
    const judge = scriptedModel([verdict(true, 'names ops'), verdict(false, 'vague'), verdict(true, 'clear')], {
      id: 'scripted',
    });
    const model = scriptedModel([reply('{"owner":"ops"}', { usage: { inputTokens: 50, outputTokens: 5 } })]);
    const { loop } = createTestLoop({
      model,
      evaluate: [evaluators.json(), evaluators.judge({ model: judge, criteria: 'names an owner', samples: 3 })],
    });
    const result = await loop.run({ goal: GOAL });
    expect(result.stopReason).toBe('completed');
    expect(judge.calls).toHaveLength(3);
    judge.assertComplete();
    expect(result.usage).toMatchObject({ modelCalls: 4, inputTokens: 50 + 300, outputTokens: 5 + 30 });
    const [evaluation] = result.trace.filter((event) => event.type === 'evaluation-end');
    expect(evaluation).toMatchObject({ passed: true, modelCalls: 3 });
  });

  it('a 1-of-3 minority fails, and the failing samples say what to fix', async () => {
    const judge = scriptedModel(
      [
        verdict(false, 'vague'),
        verdict(true, 'ok'),
        verdict(false, 'no team named'),
        ...[1, 2, 3].map(() => verdict(true, 'ok')),
      ],
      { id: 'scripted' },
    );
    const model = scriptedModel([reply('{"owner":"someone"}'), reply('{"owner":"ops"}')]);
    const { loop } = createTestLoop({
      model,
      evaluate: [evaluators.json(), evaluators.judge({ model: judge, criteria: 'names an owner', samples: 3 })],
    });
    const result = await loop.run({ goal: GOAL });
    expect(result.stopReason).toBe('completed');
    const fedBack = model.calls[1]!.messages.at(-1)!.content!;
    expect(fedBack).toContain('1 of 3 judge samples passed');
    expect(fedBack).toContain('vague | no team named');
    expect(judge.calls).toHaveLength(6);
  });

  it('checks the budget before each sample: the one it cannot pay for is not called', async () => {
    const judge = scriptedModel([verdict(true, 'ok'), verdict(true, 'ok'), verdict(true, 'ok')], { id: 'scripted' });
    const model = scriptedModel([reply('{"owner":"ops"}', { usage: { inputTokens: 100, outputTokens: 5 } })]);
    // Room for the main call and one judge request (~300 tokens estimated), not for a second on top.
    const { loop } = createTestLoop({
      model,
      evaluate: [evaluators.json(), evaluators.judge({ model: judge, criteria: 'names an owner', samples: 3 })],
      limits: { maxInputTokens: 450 },
    });
    const result = await loop.run({ goal: GOAL });
    expect(result.stopReason).toBe('budget_exhausted');
    expect(judge.calls).toHaveLength(1);
    expect(result.usage).toMatchObject({ modelCalls: 2, inputTokens: 200 });
  });

  it("'mean' averages the scores against the threshold", async () => {
    const scores = [0.9, 0.2, 0.6];
    const run = async (threshold: number) => {
      const judge = scriptedModel(
        scores.map((score) => verdict(score >= 0.5, `score ${score}`, score)),
        { id: 'scripted' },
      );
      const { loop } = createTestLoop({
        model: scriptedModel([reply('{"owner":"ops"}'), reply('{"owner":"ops"}')]),
        evaluate: [
          evaluators.json(),
          evaluators.judge({ model: judge, criteria: 'names an owner', samples: 3, aggregate: 'mean', threshold }),
        ],
        limits: { maxRetries: 0 },
      });
      return { result: await loop.run({ goal: GOAL }), judge };
    };
    const lenient = await run(0.5);
    expect(lenient.result.stopReason).toBe('completed');
    // The scored instructions ask for the score.
    expect(lenient.judge.calls[0]!.messages[0]!.content).toContain('"score": number');
    const strict = await run(0.6);
    expect(strict.result.stopReason).toBe('retries_exhausted');
    expect(strict.result.detail).toContain('mean score 0.567');
  });

  it('reviewOnSplit asks a person when the samples disagree, and not when they agree', async () => {
    const split = scriptedModel(
      [verdict(true, 'ok'), verdict(false, 'the owner is a person, not a team'), verdict(true, 'ok')],
      {
        id: 'scripted',
      },
    );
    const { loop } = createTestLoop({
      model: scriptedModel([reply('{"owner":"ops"}')]),
      evaluate: [
        evaluators.json(),
        evaluators.judge({ model: split, criteria: 'names an owner', samples: 3, reviewOnSplit: true }),
      ],
    });
    const result = await loop.run({ goal: GOAL });
    expect(result.stopReason).toBe('needs_human');
    expect(result.pendingReview).toMatchObject({
      evaluator: 'judge',
      output: { owner: 'ops' },
      reason: expect.stringContaining('2 of 3 judge samples passed'),
    });
    expect(result.pendingReview!.reason).toContain('the owner is a person, not a team');
    expect(result.usage.modelCalls).toBe(4);

    const unanimous = scriptedModel([verdict(true, 'ok'), verdict(true, 'ok'), verdict(true, 'ok')], {
      id: 'scripted',
    });
    const { loop: agreeing } = createTestLoop({
      model: scriptedModel([reply('{"owner":"ops"}')]),
      evaluate: [
        evaluators.json(),
        evaluators.judge({ model: unanimous, criteria: 'names an owner', samples: 3, reviewOnSplit: true }),
      ],
    });
    expect((await agreeing.run({ goal: GOAL })).stopReason).toBe('completed');
  });

  it('refuses bad sample options with the field named', () => {
    const model = scriptedModel([]);
    const issues = (build: () => unknown) => {
      try {
        build();
      } catch (error) {
        if (error instanceof LoopConfigError) return error.issues.map((issue) => issue.path);
        throw error;
      }
      return [];
    };
    expect(issues(() => evaluators.judge({ model, criteria: 'c', samples: 0 }))).toEqual(['judge.samples']);
    expect(issues(() => evaluators.judge({ model, criteria: 'c', samples: 2.5 }))).toEqual(['judge.samples']);
    expect(issues(() => evaluators.judge({ model, criteria: 'c', reviewOnSplit: true }))).toEqual([
      'judge.reviewOnSplit',
    ]);
    expect(issues(() => evaluators.judge({ model, criteria: 'c', samples: 3, threshold: 0.7 }))).toEqual([
      'judge.threshold',
    ]);
    expect(issues(() => evaluators.judge({ model, criteria: 'c', samples: 3, aggregate: 'median' as never }))).toEqual([
      'judge.aggregate',
    ]);
    // undefined means the default, never off.
    expect(issues(() => evaluators.judge({ model, criteria: 'c', samples: undefined }))).toEqual([]);
  });
});
