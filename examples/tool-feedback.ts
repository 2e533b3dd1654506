/**
 * Seed 003's feedback loop: a calculator (a safe expression parser, no `eval`), a time service, a
 * knowledge base that fails 20% of the time (a seeded random source, so every run is the same) and a
 * slower, reliable knowledge archive. The loop keeps each tool's success rate and latency, opens a tool's
 * circuit after two failures in a row (withheld for 800 ms, then half-open), and offers the tools by
 * success-rate weight, so after the knowledge base fails the archive is offered first. Time is virtual:
 * the tools' latencies are simulated, so the run is instant. `loopstate run` ends with a table of the
 * rates and weights.
 *
 *   loopstate run tool-feedback
 */
import { z } from 'zod';
import {
  createLoop,
  defineTool,
  evaluators,
  ToolCallError,
  ToolHealth,
  type LoopConfig,
  type Message,
  type ModelRequest,
} from 'loopstate';
import { reply, scriptedModel, toolCall, virtualClock, type ScriptStepResult } from 'loopstate/testing';
import { evaluateArithmetic } from './safe-arithmetic.js';

export const goal = 'Answer six questions with the tools: two calculations, the time, three knowledge look-ups';

/** The six requests of seed 003's demo, as workflow tasks. */
export const QUESTIONS = [
  { id: 'calculate-1', prompt: 'Calculate 12 + 34 * 2.', tool: 'calculator', input: { expression: '12 + 34 * 2' } },
  { id: 'time', prompt: 'What time is it now (UTC)?', tool: 'time_service', input: { timezone: 'UTC' } },
  { id: 'knowledge-python', prompt: 'What is Python?', tool: 'knowledge', input: { query: 'python' } },
  { id: 'knowledge-loop', prompt: 'What is Loop Engineering?', tool: 'knowledge', input: { query: 'loop' } },
  { id: 'knowledge-agent', prompt: 'What is an agent?', tool: 'knowledge', input: { query: 'agent' } },
  {
    id: 'calculate-2',
    prompt: 'Calculate (10 + 5) * (8 - 3).',
    tool: 'calculator',
    input: { expression: '(10 + 5) * (8 - 3)' },
  },
] as const;

const KNOWLEDGE: Record<string, string> = {
  python: 'Python is a widely used high-level programming language.',
  loop: 'Loop Engineering is the practice of designing bounded, observable agent loops.',
  agent: 'An agent is a system that perceives its environment and acts on it.',
};

/** The knowledge base's failure rate and the seed of its random source. */
export const KNOWLEDGE_BASE_FAILURE_RATE = 0.2;
export const DEFAULT_SEED = 44;

/**
 * A small seeded [0, 1) source (mulberry32): the same seed, the same failures.
 * @example
 * const random = seededRandom(44); random(); // 0.84…
 */
export function seededRandom(seed: number): () => number {
  let state = seed | 0;
  return () => {
    state = (state + 0x6d2b79f5) | 0;
    let mixed = Math.imul(state ^ (state >>> 15), 1 | state);
    mixed = (mixed + Math.imul(mixed ^ (mixed >>> 7), 61 | mixed)) ^ mixed;
    return ((mixed ^ (mixed >>> 14)) >>> 0) / 4_294_967_296;
  };
}

/** The loop's config: fresh tools, clock, random source and tool health for each call. */
export function toolFeedbackConfig(options: { seed?: number } = {}) {
  const clock = virtualClock(Date.UTC(2026, 0, 5, 9, 0, 0));
  const random = seededRandom(options.seed ?? DEFAULT_SEED);
  const look = (query: string) => KNOWLEDGE[query.toLowerCase()] ?? null;
  const tools = [
    defineTool({
      name: 'calculator',
      description: 'Evaluates an arithmetic expression: numbers, + - * /, parentheses.',
      input: z.object({ expression: z.string().max(200) }),
      access: 'read',
      execute: async ({ expression }, { signal }) => {
        await clock.sleep(2, signal);
        try {
          return { expression, value: evaluateArithmetic(expression) };
        } catch (error) {
          // A malformed expression is the caller's mistake, not the calculator's health.
          throw new ToolCallError({ message: (error as Error).message, blame: 'caller' });
        }
      },
    }),
    defineTool({
      name: 'time_service',
      description: 'The current date and time in UTC.',
      input: z.object({ timezone: z.literal('UTC').optional() }),
      access: 'read',
      execute: async (_input, { signal }) => {
        await clock.sleep(5, signal);
        return { now: new Date(clock.now()).toISOString() };
      },
    }),
    defineTool({
      name: 'knowledge_base',
      description: 'Fast keyword look-up in the knowledge base (sometimes times out).',
      input: z.object({ query: z.string().min(1) }),
      access: 'read',
      execute: async ({ query }, { signal }) => {
        const fails = random() < KNOWLEDGE_BASE_FAILURE_RATE;
        await clock.sleep(fails ? 300 : 120, signal);
        if (fails) throw new Error('knowledge_base timeout');
        return { query, answer: look(query) };
      },
    }),
    defineTool({
      name: 'knowledge_archive',
      description: 'Slow but reliable keyword look-up in the knowledge archive (same content as the knowledge base).',
      input: z.object({ query: z.string().min(1) }),
      access: 'read',
      execute: async ({ query }, { signal }) => {
        await clock.sleep(450, signal);
        return { query, answer: look(query) };
      },
    }),
  ];
  return {
    model: scriptedModel(Array.from({ length: 40 }, () => toolFeedbackPolicy)),
    instructions:
      'Answer each task with one tool. Prefer the first tool offered that can answer; after a failure try that tool once more, then the next. Answer with JSON {"answer", "tool"}.',
    tools,
    tasks: QUESTIONS.map(({ id, prompt }) => ({
      id,
      prompt,
      evaluate: [evaluators.json({ requiredFields: ['answer', 'tool'] })],
    })),
    toolOrder: 'success_rate',
    toolHealth: new ToolHealth({ threshold: 2, cooldownMs: 800, now: () => clock.now() }),
    limits: { maxSteps: 24, maxStepsPerTask: 5, maxRetries: 2, deadlineMs: 60_000, maxCostUsd: 0.05 },
    clock,
  } satisfies LoopConfig;
}

export function createToolFeedbackLoop(options: { seed?: number } = {}) {
  return createLoop(toolFeedbackConfig(options));
}

/**
 * The offline model: a rule-following stand-in that reads its request. It calls the first offered tool
 * that can answer the current task, calls it once more after a failure, then takes the next one offered
 * (the order is the loop's, by success rate), and answers with the first result.
 */
export function toolFeedbackPolicy(request: ModelRequest): ScriptStepResult {
  const { messages } = request;
  const taskAt = messages.findLastIndex((message) => message.role === 'user');
  const taskId = /Current task \(([^)]+)\)/.exec(messages[taskAt]?.content ?? '')?.[1];
  const question = QUESTIONS.find((entry) => entry.id === taskId);
  if (question === undefined) return reply('{"answer": null, "tool": null}');
  const attempts = toolAttempts(messages.slice(taskAt + 1));
  const last = attempts.at(-1);
  if (last?.result !== undefined) return reply(JSON.stringify({ answer: last.result, tool: last.tool }));
  const offered = request.tools.map((tool) => tool.name);
  const able =
    question.tool === 'knowledge'
      ? offered.filter((name) => name.startsWith('knowledge_'))
      : offered.filter((name) => name === question.tool);
  const failuresOf = (name: string) => attempts.filter((attempt) => attempt.tool === name).length;
  const next =
    last !== undefined && able.includes(last.tool) && failuresOf(last.tool) < 2
      ? last.tool
      : able.find((name) => failuresOf(name) === 0);
  if (next === undefined) return reply(JSON.stringify({ answer: null, tool: null, note: 'no tool could answer' }));
  return toolCall(next, question.input);
}

/** The tool calls of the current task and what each brought: the parsed result, or undefined for a failure. */
function toolAttempts(messages: readonly Message[]): { tool: string; result: unknown }[] {
  const attempts: { tool: string; result: unknown }[] = [];
  let lastCalled: string | undefined;
  for (const message of messages) {
    if (message.role === 'assistant') lastCalled = message.toolCalls?.[0]?.name;
    if (message.role === 'tool' && lastCalled !== undefined)
      attempts.push({ tool: lastCalled, result: parsedResult(message.content) });
  }
  return attempts;
}

function parsedResult(content: string): unknown {
  try {
    const parsed = JSON.parse(content) as { value?: unknown; now?: unknown; answer?: unknown };
    return parsed.value ?? parsed.now ?? parsed.answer;
  } catch {
    // A failure is answered in words, not JSON.
    return undefined;
  }
}

export const offlineConfig = () => toolFeedbackConfig();

export default offlineConfig();
