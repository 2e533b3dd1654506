import { describe, expect, it } from 'vitest';
import { finalOutput, type FinalOutputFacts } from './final-output.js';

const facts = (overrides: Partial<FinalOutputFacts>): FinalOutputFacts => ({
  completed: false,
  evaluated: undefined,
  lastReply: null,
  lastReplyIsCurrent: true,
  taskIndex: 0,
  lastEvaluation: null,
  ...overrides,
});

describe('finalOutput', () => {
  it('completed: the evaluated value and the reply it was evaluated on', () => {
    const lastEvaluation = { taskIndex: 1, reply: '{"a":1}', formatted: { value: { a: 1 } } };
    expect(
      finalOutput(
        facts({
          completed: true,
          evaluated: { a: 1 },
          lastReply: '{"a":1}',
          lastReplyIsCurrent: false,
          taskIndex: 1,
          lastEvaluation,
        }),
      ),
    ).toEqual({ output: { a: 1 }, rawOutput: '{"a":1}' });
    expect(finalOutput(facts({ completed: true, evaluated: undefined, lastReply: 'text' }))).toEqual({
      output: null,
      rawOutput: 'text',
    });
  });

  it('stopped: the format parse of the very last reply, else null', () => {
    const lastEvaluation = { taskIndex: 0, reply: '{"a":0}', formatted: { value: { a: 0 } } };
    expect(finalOutput(facts({ lastReply: '{"a":0}', lastEvaluation }))).toEqual({
      output: { a: 0 },
      rawOutput: '{"a":0}',
    });
    expect(finalOutput(facts({ lastReply: 'newer text', lastEvaluation }))).toEqual({
      output: null,
      rawOutput: 'newer text',
    });
    expect(finalOutput(facts({ lastReply: '{"a":0}', taskIndex: 1, lastEvaluation }))).toEqual({
      output: null,
      rawOutput: '{"a":0}',
    });
    expect(
      finalOutput(facts({ lastReply: 'x', lastEvaluation: { taskIndex: 0, reply: 'x', formatted: null } })),
    ).toEqual({ output: null, rawOutput: 'x' });
  });

  it('stopped on a task never started: neither output nor rawOutput', () => {
    const lastEvaluation = { taskIndex: 0, reply: 'x', formatted: { value: 'x' } };
    expect(finalOutput(facts({ lastReply: 'x', lastReplyIsCurrent: false, lastEvaluation }))).toEqual({
      output: null,
      rawOutput: null,
    });
  });
});
