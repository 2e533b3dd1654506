/**
 * No-progress detection (DESIGN §5): one test per signal. Each signal first nudges the model (the
 * nudge text is in its next request and a warning is on the result), then stops the run with
 * `no_progress` naming the signal; a higher threshold in `noProgress` lets the same run go on.
 */
import { describe, expect, it } from 'vitest';
import { evaluators } from '../../src/index.js';
import { emptyReply, reply, scriptedModel, toolCall } from '../../src/testing/index.js';
import { contentsWithRole, createTestLoop, recordingTool, requestAt } from './helpers.js';

const GOAL = 'Find the owner of record R-1';

/** The last user message of the model's `index`-th request: where feedback and nudges land. */
function lastUserMessage(model: Parameters<typeof requestAt>[0], index: number): string | undefined {
  return contentsWithRole(requestAt(model, index), 'user').at(-1);
}

describe('repeated tool call (same tool, same canonical arguments)', () => {
  const script = () => [
    toolCall('lookup', { id: 'R-1', verbose: true }),
    // Same call with its keys in another order: the fingerprint is canonical JSON.
    toolCall('lookup', { verbose: true, id: 'R-1' }),
    toolCall('lookup', { id: 'R-1', verbose: true }),
    toolCall('lookup', { id: 'R-1', verbose: true }),
  ];

  it('nudges on the third identical call without running it, then stops on the fourth', async () => {
    const { tool, executions } = recordingTool({ respond: () => ({ owner: 'ops' }) });
    const model = scriptedModel(script());
    const { loop } = createTestLoop({ model, tools: [tool] });

    const result = await loop.run({ goal: GOAL });

    expect(lastUserMessage(model, 3)).toContain('You are repeating a tool call you already made with the same arguments');
    expect(requestAt(model, 3)).toContainEqual({
      role: 'tool',
      toolCallId: 'call_2_0',
      content: 'Not executed: this exact call (lookup with the same arguments) already ran 2 time(s); its result is above.',
    });
    expect(result.warnings).toContain('no-progress nudge at step 3: repeated_tool_call');
    expect(result).toMatchObject({ stopReason: 'no_progress', status: 'failed', detail: 'no progress after a nudge: repeated_tool_call' });
    expect(executions).toHaveLength(2);
    model.assertComplete();
  });

  it('lets the run continue with a higher repeatedToolCall threshold', async () => {
    const { tool, executions } = recordingTool({ respond: () => ({ owner: 'ops' }) });
    const model = scriptedModel([...script().slice(0, 3), reply('The owner is ops.')]);
    const { loop } = createTestLoop({ model, tools: [tool], noProgress: { repeatedToolCall: 4 } });

    const result = await loop.run({ goal: GOAL });

    expect(result).toMatchObject({ stopReason: 'completed', output: 'The owner is ops.', warnings: [] });
    expect(executions).toHaveLength(3);
    model.assertComplete();
  });
});

describe('unchanged state (the state digest did not change for N decisions)', () => {
  // The same call with nothing new learned: the digest stays put once the first result is in.
  const script = () => Array.from({ length: 5 }, () => toolCall('lookup', { id: 'R-1' }));

  it('nudges when the digest is unchanged for unchangedState decisions, then stops', async () => {
    const { tool } = recordingTool({ respond: () => ({ owner: 'ops' }) });
    const model = scriptedModel(script());
    const { loop } = createTestLoop({ model, tools: [tool], noProgress: { repeatedToolCall: 100, unchangedState: 2 } });

    const result = await loop.run({ goal: GOAL });

    // Digests: d1 (no result yet), d2 (first result), d2, d2 — the second d2 makes a streak of 2.
    expect(lastUserMessage(model, 3)).toBe('Your last replies have not changed anything. Take a different approach or give your final answer.');
    expect(result.warnings).toContain('no-progress nudge at step 3: unchanged_state');
    expect(result).toMatchObject({ stopReason: 'no_progress', status: 'failed', detail: 'no progress after a nudge: unchanged_state', steps: 4 });
    expect(model.remaining).toBe(1);
  });

  it('lets the run continue with a higher unchangedState threshold', async () => {
    const { tool } = recordingTool({ respond: () => ({ owner: 'ops' }) });
    const model = scriptedModel([...script(), reply('The owner is ops.')]);
    const { loop } = createTestLoop({ model, tools: [tool], noProgress: { repeatedToolCall: 100, unchangedState: 10, duplicateObservation: 10 } });

    const result = await loop.run({ goal: GOAL });

    expect(result).toMatchObject({ stopReason: 'completed', warnings: [] });
    model.assertComplete();
  });
});

describe('same evaluator reason', () => {
  const evaluate = [evaluators.json({ requiredFields: ['owner'] })];
  const wrong = () => reply('{"team":"ops"}');

  it('nudges when the evaluator fails twice for the same reason, then stops on the third', async () => {
    const model = scriptedModel([wrong(), wrong(), wrong()]);
    const { loop } = createTestLoop({ model, evaluate, limits: { maxRetries: 5 } });

    const result = await loop.run({ goal: GOAL });

    expect(lastUserMessage(model, 1)).toContain('did not pass evaluation: missing required fields: owner');
    expect(lastUserMessage(model, 2)).toBe(
      'Your answer keeps failing evaluation for the same reason. Address that reason directly, differently from before.\n' +
        'The reason: missing required fields: owner',
    );
    expect(result.warnings).toContain('no-progress nudge at step 2: same_evaluator_reason');
    expect(result).toMatchObject({ stopReason: 'no_progress', status: 'failed', detail: 'no progress after a nudge: same_evaluator_reason' });
    // The reply never passed the format check, so there is no parsed output; the text is kept as rawOutput.
    expect(result).toMatchObject({ output: null, rawOutput: '{"team":"ops"}' });
    model.assertComplete();
  });

  it('lets the run continue with a higher sameEvaluatorReason threshold', async () => {
    const model = scriptedModel([wrong(), wrong(), wrong(), reply('{"owner":"ops"}')]);
    const { loop } = createTestLoop({ model, evaluate, limits: { maxRetries: 5 }, noProgress: { sameEvaluatorReason: 5 } });

    const result = await loop.run({ goal: GOAL });

    expect(result).toMatchObject({ stopReason: 'completed', output: { owner: 'ops' } });
    expect(result.warnings.filter((warning) => warning.startsWith('no-progress nudge'))).toEqual([]);
    model.assertComplete();
  });
});

describe('duplicate observation (every result of a round was seen before)', () => {
  // Different queries, always the same empty answer: nothing new comes back.
  const script = () => ['a', 'b', 'c', 'd', 'e'].map((query) => toolCall('search', { id: query }));
  const searchTool = () => recordingTool({ name: 'search', respond: () => ({ results: [] }) });

  it('nudges after duplicateObservation rounds with nothing new, then stops after the next one', async () => {
    const { tool, executions } = searchTool();
    const model = scriptedModel(script());
    const { loop } = createTestLoop({ model, tools: [tool] });

    const result = await loop.run({ goal: GOAL });

    expect(lastUserMessage(model, 4)).toContain('Your recent tool calls only returned information you already have.');
    expect(result.warnings).toContain('no-progress nudge at step 4: duplicate_observation');
    expect(result).toMatchObject({ stopReason: 'no_progress', status: 'failed', detail: 'no progress after a nudge: duplicate_observation', steps: 5 });
    expect(executions).toHaveLength(5);
    model.assertComplete();
  });

  it('lets the run continue with a higher duplicateObservation threshold', async () => {
    const { tool } = searchTool();
    const model = scriptedModel([...script(), reply('Nothing found for R-1.')]);
    const { loop } = createTestLoop({ model, tools: [tool], noProgress: { duplicateObservation: 10 } });

    const result = await loop.run({ goal: GOAL });

    expect(result).toMatchObject({ stopReason: 'completed', output: 'Nothing found for R-1.', warnings: [] });
    model.assertComplete();
  });
});

describe('plan stall (the task queue does not shrink)', () => {
  // Each step learns something new, so only the step count within the task gives it away.
  const script = () => ['a', 'b', 'c', 'd'].map((id) => toolCall('lookup', { id }));

  it('nudges after planStall steps in one task, then stops at the next gate', async () => {
    const { tool } = recordingTool({});
    const model = scriptedModel(script());
    const { loop } = createTestLoop({ model, tools: [tool], noProgress: { planStall: 3 } });

    const result = await loop.run({ goal: GOAL });

    expect(lastUserMessage(model, 3)).toBe('This task has taken many steps without finishing. Give your best final answer now.');
    expect(result.warnings).toContain('no-progress nudge at step 3: plan_stall');
    expect(result).toMatchObject({ stopReason: 'no_progress', status: 'failed', detail: 'no progress after a nudge: plan_stall', steps: 4 });
    model.assertComplete();
  });

  it('completes when the model answers after the nudge', async () => {
    const { tool } = recordingTool({});
    const model = scriptedModel([...script().slice(0, 3), reply('Owner: ops.')]);
    const { loop } = createTestLoop({ model, tools: [tool], noProgress: { planStall: 3 } });

    const result = await loop.run({ goal: GOAL });

    expect(result).toMatchObject({ stopReason: 'completed', output: 'Owner: ops.' });
    expect(result.warnings).toEqual(['no-progress nudge at step 3: plan_stall']);
  });

  it('lets the run continue with a higher planStall threshold', async () => {
    const { tool } = recordingTool({});
    const model = scriptedModel([...script(), reply('Owner: ops.')]);
    const { loop } = createTestLoop({ model, tools: [tool], noProgress: { planStall: 8 } });

    const result = await loop.run({ goal: GOAL });

    expect(result).toMatchObject({ stopReason: 'completed', warnings: [] });
    model.assertComplete();
  });
});

describe('same parse error', () => {
  it('asks for a usable reply, nudges on the third identical parse error, then stops on the fourth', async () => {
    const model = scriptedModel([emptyReply(), emptyReply(), emptyReply(), emptyReply()]);
    const { loop } = createTestLoop({ model });

    const result = await loop.run({ goal: GOAL });

    expect(lastUserMessage(model, 1)).toContain('Your previous reply could not be used (empty_reply).');
    expect(lastUserMessage(model, 3)).toBe('You keep making the same formatting mistake. Read the error carefully and correct it.\nThe error: empty_reply');
    expect(result.warnings).toContain('no-progress nudge at step 3: same_parse_error');
    expect(result).toMatchObject({ stopReason: 'no_progress', status: 'failed', detail: 'no progress after a nudge: same_parse_error', output: null });
    model.assertComplete();
  });

  it('lets the run continue with higher sameParseError (and unchangedState) thresholds', async () => {
    // Empty replies also leave the state digest unchanged, so both signals are raised.
    const model = scriptedModel([emptyReply(), emptyReply(), emptyReply(), emptyReply(), reply('Owner: ops.')]);
    const { loop } = createTestLoop({ model, noProgress: { sameParseError: 10, unchangedState: 10 } });

    const result = await loop.run({ goal: GOAL });

    expect(result).toMatchObject({ stopReason: 'completed', output: 'Owner: ops.', warnings: [] });
    model.assertComplete();
  });
});

describe('nudges keep the information the model needs', () => {
  it('with sameEvaluatorReason 1 the evaluator reason still reaches the model', async () => {
    const model = scriptedModel([reply('{"team":"ops"}'), reply('{"owner":"ops"}')]);
    const { loop } = createTestLoop({ model, evaluate: [evaluators.json({ requiredFields: ['owner'] })], noProgress: { sameEvaluatorReason: 1 } });

    await loop.run({ goal: GOAL });

    expect(contentsWithRole(requestAt(model, 1), 'user').join('\n')).toContain('missing required fields: owner');
  });

  it('with sameParseError 1 the parse error itself still reaches the model', async () => {
    const model = scriptedModel([emptyReply(), reply('Owner: ops.')]);
    const { loop } = createTestLoop({ model, noProgress: { sameParseError: 1 } });

    await loop.run({ goal: GOAL });

    expect(contentsWithRole(requestAt(model, 1), 'user').join('\n')).toContain('empty_reply');
  });

  it('a new call sent beside a repeated one is not told it "was already made"', async () => {
    const { tool } = recordingTool({});
    const model = scriptedModel([
      toolCall('lookup', { id: 'A' }),
      toolCall('lookup', { id: 'A' }),
      toolCall([
        { name: 'lookup', args: { id: 'A' } },
        { name: 'lookup', args: { id: 'B' } },
      ]),
      reply('done'),
    ]);
    const { loop } = createTestLoop({ model, tools: [tool] });

    await loop.run({ goal: GOAL });

    const answerToB = requestAt(model, 3).find((message) => message.role === 'tool' && message.toolCallId === 'call_2_1');
    expect(answerToB?.content).not.toContain('already made');
  });
});
