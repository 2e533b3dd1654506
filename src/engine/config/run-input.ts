/**
 * A run's input (`loop.run(input)`), checked once per run: the usual `{ goal, runId?, signal? }` by hand, anything
 * else by `runInputSchema`, which names what is wrong.
 */
import { LoopConfigError, type ConfigIssue } from '../../contracts/errors.js';
import type { Message } from '../../contracts/model.js';
import { checkMessages } from '../conversation/prior-conversation.js';
import { runInputSchema } from './config-schema.js';
import { parseInput } from './parse-input.js';
import type { KeepByReference } from './snapshot-input.js';

/**
 * One run's input: a `goal`, a prior conversation (`messages`), or both.
 * @example
 * const controller = new AbortController();
 * await loop.run({ goal: 'Status of O-101?', runId: 'order-O-101', signal: controller.signal });
 * // Turn by turn: pass the last result's transcript back with the next question.
 * const first = await loop.run({ goal: 'Status of O-101?' });
 * const second = await loop.run({ goal: 'And O-102?', messages: first.messages });
 */
export interface RunInput {
  /** The task. Optional when `messages` is given: the conversation's last user message is the task then. */
  goal?: string;
  /**
   * A prior conversation the run continues, e.g. an earlier `result.messages`. Each tool message
   * must answer a call of the assistant message before it, and every call must be answered. A
   * leading system message is taken as an earlier copy of the loop's instructions and not repeated.
   * With `tasks`, the conversation is the context of the first task only.
   */
  messages?: readonly Message[];
  runId?: string;
  signal?: AbortSignal;
}

/**
 * The usual run input, `{ goal, runId?, signal? }` with every value as `runInputSchema` wants it, checked
 * without zod: it is read on every run, and the schema's parse of it cost more than the rest of the check.
 * The same result the schema gives (the goal trimmed, keys left `undefined` dropped, in the schema's order);
 * anything else (messages, another key, a value the schema refuses, an object that is not plain, a getter
 * that throws) returns null and is checked by the schema, which names what is wrong.
 */
function plainRunInput(input: unknown): RunInput | null {
  if (typeof input !== 'object' || input === null) return null;
  let goal: string | undefined;
  let runId: string | undefined;
  let signal: AbortSignal | undefined;
  try {
    const prototype: unknown = Object.getPrototypeOf(input);
    if (prototype !== Object.prototype && prototype !== null) return null;
    for (const key of Object.keys(input)) {
      const value: unknown = (input as Record<string, unknown>)[key];
      if (value === undefined) continue;
      if (key === 'goal' && typeof value === 'string') goal = value.trim();
      else if (key === 'runId' && typeof value === 'string' && value.length >= 1 && value.length <= 200) runId = value;
      else if (key === 'signal' && value instanceof AbortSignal) signal = value;
      else return null;
    }
  } catch {
    return null;
  }
  if (goal === undefined || goal === '') return null;
  const checked: RunInput = { goal };
  if (runId !== undefined) checked.runId = runId;
  if (signal !== undefined) checked.signal = signal;
  return checked;
}

const keepRunInputValue: KeepByReference = (path) => path.length === 1 && path[0] === 'signal';

export function validateRunInput(input: unknown): RunInput {
  const plain = plainRunInput(input);
  if (plain !== null) return plain;
  const { messages: given, ...rest } = parseInput(runInputSchema, input, keepRunInputValue, 'run_input');
  const runInputError = (issues: ConfigIssue[]) => new LoopConfigError({ issues, scope: 'run_input' });
  if (given === undefined) {
    if (rest.goal === undefined)
      throw runInputError([
        { path: 'goal', message: 'expected a non-empty goal, or a prior conversation in `messages`' },
      ]);
    return rest;
  }
  const { messages, issues } = checkMessages(given);
  if (issues.length === 0 && rest.goal === undefined && messages.at(-1)?.role !== 'user') {
    issues.push({
      path: 'messages',
      message:
        'without a goal the conversation must end with a user message (the task); pass a goal or append the next user message',
    });
  }
  if (issues.length > 0) throw runInputError(issues);
  return { ...rest, messages };
}
