import { describe, expect, it } from 'vitest';
import { createToolFeedbackLoop, goal, QUESTIONS, seededRandom } from '../../examples/tool-feedback.js';
import { evaluateArithmetic } from '../../examples/safe-arithmetic.js';

describe('tool-feedback example (seed 003)', () => {
  it('answers all six questions; the knowledge base fails twice in a row, its circuit opens, the archive is offered first', async () => {
    const result = await createToolFeedbackLoop().run({ goal });
    expect(result).toMatchObject({
      status: 'succeeded',
      stopReason: 'completed',
      detail: '6 of 6 task(s) passed evaluation',
      steps: 14,
      warnings: [],
    });
    expect(result.output).toEqual({ answer: 75, tool: 'calculator' });
    const calls = result.trace.flatMap((event) => (event.type === 'tool-end' ? [`${event.name}:${event.status}`] : []));
    expect(calls).toEqual([
      'calculator:ok',
      'time_service:ok',
      'knowledge_base:ok',
      'knowledge_base:error',
      'knowledge_base:error',
      'knowledge_archive:ok',
      'knowledge_archive:ok',
      'calculator:ok',
    ]);
    const health = result.trace.filter((event) => event.type === 'tool-health');
    const circuitOf = (index: number, name: string) => health[index]?.tools.find((tool) => tool.name === name)?.circuit;
    // After the second failure (the fifth round) the circuit is open and the tool is not offered.
    expect(circuitOf(3, 'knowledge_base')).toBe('closed');
    expect(circuitOf(4, 'knowledge_base')).toBe('open');
    expect(health[4]?.offered).toEqual(['calculator', 'time_service', 'knowledge_archive']);
    // 800 ms of simulated latency later it is half-open: offered again, after the archive (lower weight).
    expect(health.at(-1)).toMatchObject({
      offered: ['calculator', 'time_service', 'knowledge_archive', 'knowledge_base'],
    });
    expect(health.at(-1)?.tools).toEqual([
      {
        name: 'calculator',
        calls: 2,
        successes: 2,
        failures: 0,
        consecutiveFailures: 0,
        successRate: 1,
        meanLatencyMs: 2,
        weight: 1,
        circuit: 'closed',
      },
      {
        name: 'time_service',
        calls: 1,
        successes: 1,
        failures: 0,
        consecutiveFailures: 0,
        successRate: 1,
        meanLatencyMs: 5,
        weight: 1,
        circuit: 'closed',
      },
      {
        name: 'knowledge_base',
        calls: 3,
        successes: 1,
        failures: 2,
        consecutiveFailures: 2,
        successRate: 1 / 3,
        meanLatencyMs: 240,
        weight: 0.5,
        circuit: 'half_open',
      },
      {
        name: 'knowledge_archive',
        calls: 2,
        successes: 2,
        failures: 0,
        consecutiveFailures: 0,
        successRate: 1,
        meanLatencyMs: 450,
        weight: 1,
        circuit: 'closed',
      },
    ]);
  });

  it('is the same run every time (seeded), and another seed gives another run', async () => {
    const callsOf = async (seed?: number) =>
      (await createToolFeedbackLoop(seed === undefined ? {} : { seed }).run({ goal })).trace.flatMap((event) =>
        event.type === 'tool-end' ? [`${event.name}:${event.status}`] : [],
      );
    expect(await callsOf()).toEqual(await callsOf());
    expect(await callsOf(1)).not.toEqual(await callsOf());
  });

  it('fails the knowledge base about 20% of the time', () => {
    const random = seededRandom(7);
    const failures = Array.from({ length: 10_000 }, () => random() < 0.2).filter(Boolean).length;
    expect(failures / 10_000).toBeCloseTo(0.2, 1);
  });

  it('has the six questions of the seed', () => {
    expect(QUESTIONS.map((question) => question.id)).toEqual([
      'calculate-1',
      'time',
      'knowledge-python',
      'knowledge-loop',
      'knowledge-agent',
      'calculate-2',
    ]);
  });
});

describe('safe arithmetic (no eval)', () => {
  it.each([
    ['12 + 34 * 2', 80],
    ['(10 + 5) * (8 - 3)', 75],
    ['-3 - -2', -1],
    ['1.5 * 4 / 3', 2],
    ['2 * (3 + (4 - 1))', 12],
    ['.5 + 1', 1.5],
  ])('%s = %d', (expression, value) => {
    expect(evaluateArithmetic(expression)).toBe(value);
  });

  it.each([
    ['process.exit(1)', /unexpected "p"/],
    ['1 +', /unexpected end/],
    ['(1 + 2', /expected "\)"/],
    ['1 / 0', /division by zero/],
    ['', /empty/],
    ['2 3', /unexpected "3"/],
  ])('refuses %s', (expression, message) => {
    expect(() => evaluateArithmetic(expression)).toThrow(message);
  });
});
