/**
 * Context that stays inside the window: a 60-step loop of distinct ~2 KB tool results never sends
 * a request over `context.maxInputTokensPerCall`, with either strategy, and never orphans a tool
 * result or loses one the model has not answered yet.
 */
import { describe, expect, it } from 'vitest';
import { CONTEXT_SUMMARY_PROMPT } from '../../src/engine/prompts.js';
import { checkMessages } from '../../src/engine/conversation/prior-conversation.js';
import type { LoopConfig, Message, ModelRequest, RunResult, TraceEvent } from 'loopstate';
import { Transcript } from '../../src/engine/runtime/transcript.js';
import { modelError, reply, scriptedModel, toolCall, type ScriptStep } from 'loopstate/testing';
import { createTestLoop, recordingTool } from './helpers.js';

const STEPS = 60;
const CEILING = 4_000;
/** Distinct ~2 KB result per id. */
const resultFor = (id: string) => ({ id, body: `${id} `.repeat(2_000 / (id.length + 1)) });
// Every default threshold leaves this loop of distinct calls and new results alone; none is raised.
const noProgress = {};

const isSummaryRequest = (request: ModelRequest) => request.messages[0]?.content === CONTEXT_SUMMARY_PROMPT;

/** 60 distinct lookups then a final reply; summary requests (if any) are answered with a memory. */
function agentModel(decisionUsage = { inputTokens: 100, outputTokens: 20 }) {
  let decisions = 0;
  let summaries = 0;
  const step: ScriptStep = (request) => {
    if (isSummaryRequest(request)) {
      summaries++;
      return reply(`Looked up records up to R-${decisions}; nothing found yet.`, {
        usage: { inputTokens: 300, outputTokens: 30 },
      });
    }
    decisions++;
    return decisions <= STEPS
      ? toolCall('lookup', { id: `R-${decisions}` }, { usage: decisionUsage })
      : reply('All 60 records checked.', { usage: decisionUsage });
  };
  const model = scriptedModel(Array.from({ length: 3 * STEPS }, () => step));
  return { model, summaries: () => summaries, decisions: () => decisions };
}

function estimateOf(request: ModelRequest): number {
  const transcript = new Transcript(request.tools.reduce((sum, spec) => sum + JSON.stringify(spec).length, 0));
  for (const message of request.messages) transcript.append(message);
  return transcript.estimateTokens();
}

/** The results after the request's last assistant message: what the model is about to answer. */
function unanswered(messages: readonly Message[]): Message[] {
  const last = messages.findLastIndex((message) => message.role === 'assistant');
  return messages.slice(last + 1).filter((message) => message.role === 'tool');
}

async function runLongLoop(
  context: LoopConfig['context'],
  limits: LoopConfig['limits'] = {},
  decisionUsage?: { inputTokens: number; outputTokens: number },
) {
  const { tool, executions } = recordingTool({ respond: ({ id }) => resultFor(String(id)) });
  const agent = agentModel(decisionUsage);
  const { loop } = createTestLoop({
    model: agent.model,
    tools: [tool],
    instructions: 'Check every record.',
    limits: { maxSteps: 70, ...limits },
    noProgress,
    context,
  });
  const result = await loop.run({ goal: 'Check records R-1 to R-60 one by one.' });
  return { result, agent, executions };
}

function contextEvents(result: RunResult): Extract<TraceEvent, { type: 'context-trimmed' }>[] {
  return result.trace.filter(
    (event): event is Extract<TraceEvent, { type: 'context-trimmed' }> => event.type === 'context-trimmed',
  );
}

function expectEveryRequestInside(requests: readonly ModelRequest[]): void {
  requests.forEach((request, index) => {
    expect(estimateOf(request), `request ${index}`).toBeLessThanOrEqual(CEILING);
    // No orphaned tool result, no unanswered call: the provider would reject either.
    expect(checkMessages(request.messages).issues, `request ${index}`).toEqual([]);
  });
}

describe('context.maxInputTokensPerCall over a 60-step loop', () => {
  it('grows past the ceiling without a context option (the problem being solved)', async () => {
    const { result, agent } = await runLongLoop(undefined);
    expect(result.stopReason).toBe('completed');
    expect(Math.max(...agent.model.calls.map(estimateOf))).toBeGreaterThan(5 * CEILING);
  });

  it('trim: every request stays under the ceiling, the latest results always reach the model whole', async () => {
    const { result, agent, executions } = await runLongLoop({ maxInputTokensPerCall: CEILING });
    expect(result.stopReason).toBe('completed');
    expect(executions).toHaveLength(STEPS);
    expect(agent.model.calls).toHaveLength(STEPS + 1);
    expectEveryRequestInside(agent.model.calls);
    agent.model.calls.forEach((request, index) => {
      if (index === 0) return;
      // The result the model is about to answer is the full result of its last call, never a marker.
      expect(unanswered(request.messages).map((message) => message.content)).toEqual([
        JSON.stringify(resultFor(`R-${index}`)),
      ]);
      expect(request.messages.slice(0, 2)).toEqual([
        { role: 'system', content: 'Check every record.' },
        { role: 'user', content: 'Check records R-1 to R-60 one by one.' },
      ]);
    });
    const events = contextEvents(result);
    expect(events.length).toBeGreaterThan(10);
    for (const event of events) {
      expect(event).toMatchObject({ strategy: 'trim', ceilingTokens: CEILING });
      expect(event.tokensBefore).toBeGreaterThan(CEILING);
      expect(event.tokensAfter).toBeLessThanOrEqual(CEILING);
    }
    // The trace names each dropped result by the observation id its tool-end event recorded.
    const observed = new Map(
      result.trace.flatMap((event) =>
        event.type === 'tool-end' ? [[event.callId, event.observationId] as const] : [],
      ),
    );
    const dropped = events.flatMap((event) => event.dropped);
    expect(dropped.length).toBeGreaterThan(40);
    for (const { callId, tool, observationId } of dropped) {
      expect(tool).toBe('lookup');
      expect(observationId).toBe(observed.get(callId));
    }
    expect(
      result.messages.some(
        (message) => message.role === 'tool' && message.content.includes('dropped to fit the context'),
      ),
    ).toBe(true);
  });

  it('summarize: older turns become one memory, paid from the budgets, and every request stays under the ceiling', async () => {
    const { result, agent } = await runLongLoop({ maxInputTokensPerCall: CEILING, strategy: 'summarize' });
    expect(result.stopReason).toBe('completed');
    expect(agent.decisions()).toBe(STEPS + 1);
    const summaries = agent.summaries();
    expect(summaries).toBeGreaterThan(5);
    expect(agent.model.calls).toHaveLength(STEPS + 1 + summaries);
    expectEveryRequestInside(agent.model.calls);
    const main = agent.model.calls.filter((request) => !isSummaryRequest(request));
    main.forEach((request, index) => {
      if (index > 0)
        expect(unanswered(request.messages).map((message) => message.content)).toEqual([
          JSON.stringify(resultFor(`R-${index}`)),
        ]);
      expect(
        request.messages.filter((message) => message.content?.startsWith('[loopstate: memory')).length,
      ).toBeLessThanOrEqual(1);
    });
    expect(main.at(-1)?.messages.some((message) => message.content?.includes('Looked up records up to'))).toBe(true);
    // Every summary call's tokens and cost are counted: 61 decisions at 100/20 tokens plus the summaries at 300/30.
    expect(result.usage.inputTokens).toBe((STEPS + 1) * 100 + summaries * 300);
    expect(result.usage.outputTokens).toBe((STEPS + 1) * 20 + summaries * 30);
    expect(result.usage.costUsd).toBeCloseTo(
      ((STEPS + 1) * (100 * 0.4 + 20 * 1.6) + summaries * (300 * 0.4 + 30 * 1.6)) / 1e6,
      12,
    );
    // And every summary call is a model call.
    expect(result.usage.modelCalls).toBe(STEPS + 1 + summaries);
    const events = contextEvents(result).filter((event) => event.strategy === 'summarize');
    expect(events).toHaveLength(summaries);
    expect(events[0]).toMatchObject({ summaryUsage: { inputTokens: 300, outputTokens: 30 }, summarySkipped: null });
    expect(events[0]?.messagesSummarized).toBeGreaterThan(0);
  });

  it('summarize is refused when no budget can pay for it: the loop trims instead, with one warning', async () => {
    // 61 decisions use 1,220 output tokens; a summary would need its 512-token reserve on top.
    const { result, agent } = await runLongLoop(
      { maxInputTokensPerCall: CEILING, strategy: 'summarize' },
      { maxOutputTokens: 1_500 },
    );
    expect(result.stopReason).toBe('completed');
    expect(agent.summaries()).toBeGreaterThan(0);
    const skipped = contextEvents(result).filter((event) => event.summarySkipped !== null);
    expect(skipped.length).toBeGreaterThan(0);
    expect(skipped[0]?.summarySkipped).toMatch(/^refused: limits\.maxOutputTokens \(1500\)/);
    expect(skipped.every((event) => event.strategy === 'trim' && event.tokensAfter <= CEILING)).toBe(true);
    expect(result.warnings.filter((warning) => warning.startsWith('context: summarize was refused'))).toHaveLength(1);
    expect(result.usage.outputTokens).toBeLessThanOrEqual(1_500);
    expectEveryRequestInside(agent.model.calls);
  });

  it('summarize is refused from the start when the budgets cannot pay for any summary: no summary call is made', async () => {
    // 61 decisions of 5 output tokens fit in 500; a summary's 512-token reserve never does.
    const { result, agent } = await runLongLoop(
      { maxInputTokensPerCall: CEILING, strategy: 'summarize' },
      { maxOutputTokens: 500 },
      { inputTokens: 100, outputTokens: 5 },
    );
    expect(result.stopReason).toBe('completed');
    expect(agent.summaries()).toBe(0);
    expect(agent.model.calls).toHaveLength(STEPS + 1);
    expectEveryRequestInside(agent.model.calls);
    expect(result.warnings).toContainEqual(
      expect.stringMatching(
        /^context: summarize was refused \(refused: limits\.maxOutputTokens \(500\) cannot pay for it.*; trimmed instead$/,
      ),
    );
  });
});

describe('context ceiling edge cases', () => {
  it('does not send a request that cannot fit even after trimming: fatal_error with code context_overflow', async () => {
    const model = scriptedModel([reply('unused')]);
    const { loop } = createTestLoop({ model, context: { maxInputTokensPerCall: 50 } });
    const result = await loop.run({ goal: 'x'.repeat(1_000) });
    expect(model.calls).toHaveLength(0);
    expect(result.stopReason).toBe('fatal_error');
    expect(result.error).toMatchObject({ code: 'context_overflow' });
    expect(result.detail).toContain('over the per-call ceiling of 50');
    expect(result.detail).toContain('context.maxInputTokensPerCall');
  });

  it('a summary call that fails (every attempt) or answers with a tool call falls back to trim with a warning', async () => {
    const { tool } = recordingTool({ respond: ({ id }) => resultFor(String(id)) });
    let decisions = 0;
    let summaries = 0;
    const step: ScriptStep = (request) => {
      if (isSummaryRequest(request)) {
        summaries++;
        // The first summary call fails on each of its three transport attempts.
        return summaries <= 3 ? modelError({ status: 503 }) : toolCall('lookup', { id: 'R-0' });
      }
      decisions++;
      return decisions <= 12 ? toolCall('lookup', { id: `R-${decisions}` }) : reply('done');
    };
    const model = scriptedModel(Array.from({ length: 40 }, () => step));
    const { loop } = createTestLoop({
      model,
      tools: [tool],
      limits: { maxSteps: 20 },
      noProgress,
      context: { maxInputTokensPerCall: 2_000, strategy: 'summarize', keepTurns: 2 },
    });
    const result = await loop.run({ goal: 'Check twelve records.' });
    expect(result.stopReason).toBe('completed');
    expect(summaries).toBeGreaterThanOrEqual(4);
    expect(result.warnings).toContainEqual(
      expect.stringMatching(
        /^context: summarize did not run \(the summary call failed: 3rd consecutive transport failure of the summary call \(HTTP 503\); raise limits\.maxTransportAttempts \(3\)\. Last error: .*\); trimmed instead$/,
      ),
    );
    expect(result.warnings).toContain(
      'context: summarize did not run (the summary call returned no plain-text summary); trimmed instead',
    );
    const main = model.calls.filter((request) => !isSummaryRequest(request));
    expect(Math.max(...main.map(estimateOf))).toBeLessThanOrEqual(2_000);
    for (const request of main) expect(checkMessages(request.messages).issues).toEqual([]);
  });

  it('trims a long prior conversation too, keeping its first user message and the new goal', async () => {
    const model = scriptedModel([reply('ok')]);
    const { loop } = createTestLoop({ model, instructions: 'Be brief.', context: { maxInputTokensPerCall: 600 } });
    const prior: Message[] = Array.from({ length: 20 }, (_, index): Message =>
      index % 2 === 0
        ? { role: 'user', content: `question ${index} ${'q'.repeat(300)}` }
        : { role: 'assistant', content: `answer ${index} ${'a'.repeat(300)}` },
    );
    const result = await loop.run({ goal: 'And now?', messages: prior });
    expect(result.stopReason).toBe('completed');
    const request = model.calls[0]?.messages ?? [];
    expect(estimateOf(model.calls[0] as ModelRequest)).toBeLessThanOrEqual(600);
    expect(request[0]).toEqual({ role: 'system', content: 'Be brief.' });
    expect(request[1]).toEqual(prior[0]);
    expect(request.at(-1)).toEqual({ role: 'user', content: 'And now?' });
    expect(request.length).toBeLessThan(prior.length);
  });

  it('the input budget is checked on the request as it will be sent: a long prior conversation trimmed to the ceiling is not refused', async () => {
    const model = scriptedModel([reply('ok')]);
    const prior: Message[] = Array.from({ length: 20 }, (_, index): Message =>
      index % 2 === 0
        ? { role: 'user', content: `question ${index} ${'q'.repeat(300)}` }
        : { role: 'assistant', content: `answer ${index} ${'a'.repeat(300)}` },
    );
    // Untrimmed, the first request is ~1,700 tokens: over the 1,000-token budget. Trimmed, it is under 600.
    const { loop } = createTestLoop({
      model,
      context: { maxInputTokensPerCall: 600 },
      limits: { maxInputTokens: 1_000 },
    });

    const result = await loop.run({ goal: 'And now?', messages: prior });

    expect(result.stopReason).toBe('completed');
    expect(estimateOf(model.calls[0] as ModelRequest)).toBeLessThanOrEqual(600);
  });

  it('a summary made before a main call that fails is still counted, tokens and call', async () => {
    let calls = 0;
    const { tool } = recordingTool({ respond: ({ id }) => resultFor(String(id)) });
    const step: ScriptStep = (request) => {
      calls++;
      if (isSummaryRequest(request))
        return reply('memory of the earlier lookups', { usage: { inputTokens: 300, outputTokens: 30 } });
      // The first main call after a summary fails fatally.
      if (request.messages.some((message) => message.content?.startsWith('[loopstate: memory')))
        return modelError({ status: 401, message: 'bad key' });
      return toolCall('lookup', { id: `R-${calls}` }, { usage: { inputTokens: 100, outputTokens: 20 } });
    };
    const model = scriptedModel(Array.from({ length: 40 }, () => step));
    const { loop } = createTestLoop({
      model,
      tools: [tool],
      limits: { maxSteps: 30 },
      context: { maxInputTokensPerCall: CEILING, strategy: 'summarize', keepTurns: 1 },
    });

    const result = await loop.run({ goal: 'Check records.' });

    expect(result.stopReason).toBe('fatal_error');
    const summaries = model.calls.filter(isSummaryRequest).length;
    expect(summaries).toBe(1);
    const decisions = model.calls.length - summaries - 1;
    expect(result.usage).toMatchObject({
      modelCalls: model.calls.length,
      inputTokens: decisions * 100 + 300,
      outputTokens: decisions * 20 + 30,
    });
  });

  it("uses the model's contextWindowTokens as the ceiling when maxInputTokensPerCall is left out (or undefined)", async () => {
    const { tool } = recordingTool({ respond: ({ id }) => resultFor(String(id)) });
    const model = Object.assign(
      scriptedModel([
        ...Array.from({ length: 12 }, (_, index) => toolCall('lookup', { id: `R-${index + 1}` })),
        reply('done'),
      ]),
      { contextWindowTokens: 2_000 },
    );
    const { loop } = createTestLoop({
      model,
      tools: [tool],
      limits: { maxSteps: 20 },
      noProgress,
      context: { maxInputTokensPerCall: undefined, strategy: undefined, keepTurns: undefined },
    });
    const result = await loop.run({ goal: 'Check twelve records.' });
    expect(result.stopReason).toBe('completed');
    expect(Math.max(...model.calls.map(estimateOf))).toBeLessThanOrEqual(2_000);
    expect(contextEvents(result).length).toBeGreaterThan(0);
  });
});
