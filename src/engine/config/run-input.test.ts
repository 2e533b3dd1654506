/**
 * Run-input validation (`loop.run(input)`): the usual input checked by hand, anything else by the schema, with the
 * same result and the same refusals. test/integration/bad-input.test.ts covers the messages end to end.
 */
import { describe, expect, it, vi } from 'vitest';
import { LoopConfigError } from '../../contracts/errors.js';
import { configError } from '../../../test/support/config-error.js';
import { runInputSchema } from './config-schema.js';
import { validateRunInput } from './run-input.js';
import { snapshotInput } from './snapshot-input.js';

describe('validateRunInput', () => {
  it('returns the goal trimmed and keeps a run id and signal', () => {
    const signal = new AbortController().signal;
    const input = validateRunInput({ goal: '  What is O-101?  ', runId: 'run-1', signal });
    expect(input).toEqual({ goal: 'What is O-101?', runId: 'run-1', signal });
    expect(input.signal).toBe(signal);
  });

  it('accepts a run id of exactly 200 characters', () => {
    expect(validateRunInput({ goal: 'g', runId: 'r'.repeat(200) }).runId).toHaveLength(200);
  });

  it.each([
    ['an empty goal', { goal: '' }, 'goal', /^expected a non-empty goal$/],
    ['a whitespace goal', { goal: ' \n\t ' }, 'goal', /^expected a non-empty goal$/],
    ['a missing goal', {}, 'goal', /^expected a non-empty goal, or a prior conversation in `messages`$/],
    ['a run id over 200 characters', { goal: 'g', runId: 'r'.repeat(201) }, 'runId', /<=200/],
    ['an empty run id', { goal: 'g', runId: '' }, 'runId', />=1/],
    [
      'a signal that is not an AbortSignal',
      { goal: 'g', signal: { aborted: false } },
      'signal',
      /^expected an AbortSignal$/,
    ],
    [
      'an AbortController instead of its signal',
      { goal: 'g', signal: new AbortController() },
      'signal',
      /^expected an AbortSignal$/,
    ],
    ['an unknown key', { goal: 'g', timeoutMs: 5 }, 'timeoutMs', /^unknown option/],
  ])('refuses %s, naming its path', (_name, input, path, message) => {
    const error = configError(() => validateRunInput(input));
    expect(error.issues).toEqual([{ path, message: expect.stringMatching(message) }]);
    expect(error.code).toBe('invalid_config');
  });

  it('names every bad field at once', () => {
    const error = configError(() => validateRunInput({ goal: ' ', runId: '', signal: 'stop', extra: true }));
    expect(error.issues.map((issue) => issue.path).sort()).toEqual(['extra', 'goal', 'runId', 'signal']);
  });

  it('names the root when the input is not an object', () => {
    const error = configError(() => validateRunInput('What is O-101?'));
    expect(error.issues).toEqual([{ path: '', message: expect.stringMatching(/expected object/) }]);
  });
});

describe('validateRunInput without zod for the usual input', () => {
  const signal = new AbortController().signal;
  /** What the schema makes of an input, as validateRunInput did for every input before the plain path. */
  const bySchema = (input: unknown): unknown => {
    const { value } = snapshotInput(input, (path) => path.length === 1 && path[0] === 'signal');
    return runInputSchema.parse(value);
  };

  it.each([
    ['a goal', { goal: 'What is O-101?' }],
    ['a goal with white space around it', { goal: ' \u00a0 What is O-101?\n\ufeff' }],
    ['every field, in another order', { signal, runId: 'run-1', goal: 'g' }],
    ['a run id of 1 character', { goal: 'g', runId: 'r' }],
    ['a run id of 200 characters', { goal: 'g', runId: 'r'.repeat(200) }],
    ['fields left undefined', { goal: 'g', runId: undefined, signal: undefined, messages: undefined }],
    ['an object without a prototype', Object.assign(Object.create(null) as object, { goal: 'g', runId: 'r' })],
  ])('gives what the schema gives, without asking it: %s', (_name, input) => {
    const parse = vi.spyOn(runInputSchema, 'safeParse');
    try {
      const checked = validateRunInput(input);
      expect(parse).not.toHaveBeenCalled();
      const expected = bySchema(input) as Record<string, unknown>;
      expect(checked).toEqual(expected);
      expect(Object.keys(checked)).toEqual(Object.keys(expected));
      expect(checked.signal).toBe(expected.signal);
    } finally {
      parse.mockRestore();
    }
  });

  it.each([
    ['messages', { messages: [{ role: 'user', content: 'hi' }] }],
    ['an unknown key', { goal: 'g', timeoutMs: 5 }],
    ['a whitespace goal', { goal: ' \t ' }],
    ['a run id of 201 characters', { goal: 'g', runId: 'r'.repeat(201) }],
    ['a signal-like object', { goal: 'g', signal: { aborted: false } }],
    [
      'a class instance',
      new (class Input {
        goal = 'g';
      })(),
    ],
    [
      'a getter that throws',
      {
        get goal(): string {
          throw new Error('unreadable');
        },
      },
    ],
  ])('leaves the rest to the schema: %s', (_name, input) => {
    const parse = vi.spyOn(runInputSchema, 'safeParse');
    try {
      let outcome: unknown;
      try {
        outcome = validateRunInput(input);
      } catch (error) {
        outcome = error;
      }
      // A getter that throws is refused while the input is copied, before the schema is asked.
      if (_name !== 'a getter that throws') expect(parse).toHaveBeenCalledTimes(1);
      if (_name === 'messages') expect(outcome).toMatchObject({ messages: [{ role: 'user', content: 'hi' }] });
      else if (_name === 'a class instance') expect(outcome).toEqual({ goal: 'g' });
      else expect(outcome).toBeInstanceOf(LoopConfigError);
    } finally {
      parse.mockRestore();
    }
  });
});
