/**
 * A conversation passed into `run({ messages })` and handed back on `result.messages`: checked
 * message by message (a provider rejects an orphaned tool result or an unanswered call, so we
 * refuse them first, naming the message), and turned into the start of the run's transcript.
 */
import { z } from 'zod';
import type { ConfigIssue } from '../../contracts/errors.js';
import type { Message } from '../../contracts/model.js';
import { notRunBeforeStopAnswer } from '../prompts.js';

const toolCallSchema = z
  .object({
    id: z.string().min(1, 'expected a non-empty tool call id'),
    name: z.string().min(1, 'expected a tool name'),
    arguments: z.string(),
  })
  .strict();

const messageSchemas = {
  system: z.object({ role: z.literal('system'), content: z.string() }).strict(),
  user: z.object({ role: z.literal('user'), content: z.string() }).strict(),
  assistant: z
    .object({
      role: z.literal('assistant'),
      content: z.string().nullable(),
      toolCalls: z.array(toolCallSchema).optional(),
    })
    .strict(),
  tool: z
    .object({
      role: z.literal('tool'),
      toolCallId: z.string().min(1, 'expected the id of the tool call it answers'),
      content: z.string(),
    })
    .strict(),
} as const;

type Role = keyof typeof messageSchemas;
const ROLES = Object.keys(messageSchemas) as Role[];
const isRole = (value: unknown): value is Role => typeof value === 'string' && (ROLES as string[]).includes(value);

/** zod's issue path as `messages[3].toolCalls[0].id`. */
function issuePath(index: number, path: readonly PropertyKey[]): string {
  return z.core.toDotPath(['messages', index, ...path]);
}

function shapeIssues(value: unknown, index: number): { message: Message | null; issues: ConfigIssue[] } {
  if (typeof value !== 'object' || value === null || Array.isArray(value)) {
    return {
      message: null,
      issues: [
        { path: issuePath(index, []), message: 'expected a message object such as { role: "user", content: "..." }' },
      ],
    };
  }
  const role: unknown = (value as { role?: unknown }).role;
  if (!isRole(role)) {
    return {
      message: null,
      issues: [
        { path: issuePath(index, ['role']), message: `expected one of ${ROLES.map((name) => `"${name}"`).join(', ')}` },
      ],
    };
  }
  const parsed = messageSchemas[role].safeParse(value);
  if (!parsed.success) {
    const issues = parsed.error.issues.flatMap((issue) =>
      issue.code === 'unrecognized_keys'
        ? issue.keys.map((key) => ({
            path: issuePath(index, [...issue.path, key]),
            message: `unknown field of a ${role} message; expected: ${Object.keys(messageSchemas[role].shape).join(', ')}`,
          }))
        : [{ path: issuePath(index, issue.path), message: issue.message }],
    );
    return { message: null, issues };
  }
  const message = parsed.data as Message;
  if (message.role === 'assistant' && message.content === null && (message.toolCalls ?? []).length === 0) {
    return {
      message: null,
      issues: [
        { path: issuePath(index, ['content']), message: 'an assistant message needs text or at least one tool call' },
      ],
    };
  }
  // A plain copy: the caller's objects are never aliased into the run.
  if (message.role === 'assistant' && message.toolCalls !== undefined)
    return { message: { ...message, toolCalls: message.toolCalls.map((call) => ({ ...call })) }, issues: [] };
  return { message: { ...message }, issues: [] };
}

/**
 * Checks a prior conversation message by message and returns a plain copy of it, or the issues
 * (paths like `messages[3].role`). Besides each message's shape: a tool message must answer a
 * call of the assistant message just before it (only tool messages in between), each call is
 * answered exactly once, and no call is left unanswered.
 * @example
 * checkMessages([{ role: 'tool', toolCallId: 'c1', content: '{}' }]).issues
 * // [{ path: 'messages[0].toolCallId', message: 'answers no tool call: ...' }]
 */
export function checkMessages(value: unknown): { messages: Message[]; issues: ConfigIssue[] } {
  if (!Array.isArray(value))
    return { messages: [], issues: [{ path: 'messages', message: 'expected an array of messages' }] };
  const messages: Message[] = [];
  const issues: ConfigIssue[] = [];
  // Calls of the last assistant message not answered yet: id → where the call is.
  let open = new Map<string, string>();
  const closeOpenCalls = () => {
    for (const [id, path] of open)
      issues.push({
        path,
        message: `tool call "${id}" is never answered: a tool message with toolCallId "${id}" must follow its assistant message`,
      });
    open = new Map();
  };
  const entries: unknown[] = [...(value as unknown[])];
  entries.forEach((entry, index) => {
    const checked = shapeIssues(entry, index);
    issues.push(...checked.issues);
    const message = checked.message;
    if (message === null) return;
    // Instructions come first or not at all: a system message later on (say, from stored user input) would rewrite them mid-way.
    if (message.role === 'system' && messages.some((earlier) => earlier.role !== 'system')) {
      issues.push({
        path: issuePath(index, ['role']),
        message: 'a system message may only start the conversation; send later instructions as a user message',
      });
      return;
    }
    messages.push(message);
    if (message.role === 'tool') {
      if (open.delete(message.toolCallId)) return;
      issues.push({
        path: issuePath(index, ['toolCallId']),
        message: `answers no tool call: "${message.toolCallId}" is not an unanswered call of the assistant message before it`,
      });
      return;
    }
    closeOpenCalls();
    if (message.role !== 'assistant') return;
    message.toolCalls?.forEach((call, callIndex) => {
      const path = issuePath(index, ['toolCalls', callIndex, 'id']);
      if (open.has(call.id))
        issues.push({ path, message: `duplicate tool call id "${call.id}" in one assistant message` });
      else open.set(call.id, path);
    });
  });
  closeOpenCalls();
  return { messages, issues };
}

/**
 * How a run starts from its input: the goal it works on, the prior messages its first task's
 * conversation begins with, and whether the goal is appended as a new user message.
 * @example
 * const conversation: PriorConversation = { goal: 'And O-102?', messages: earlier, goalGiven: true, warnings: [] };
 */
export interface PriorConversation {
  /** The given goal, or the last user message of `messages` when none was given. */
  goal: string;
  /** The prior conversation without the copy of the instructions it began with. */
  messages: readonly Message[];
  /** False when the conversation's own last user message is the task. */
  goalGiven: boolean;
  warnings: string[];
}

/**
 * The run's conversation from its (validated) input. The loop's instructions always lead the
 * transcript: a system message at the start of `messages` is taken to be an earlier copy of them
 * and is not repeated (with a warning when it differs from the current instructions).
 * @example
 * priorConversation({ goal: 'And O-102?', messages: previous.messages }, 'Answer order questions.')
 */
export function priorConversation(
  input: { goal?: string; messages?: readonly Message[] },
  instructions: string,
): PriorConversation {
  const given = input.messages ?? [];
  let start = 0;
  const warnings: string[] = [];
  if (instructions !== '') {
    while (given[start]?.role === 'system') {
      if (given[start]?.content !== instructions) {
        warnings.push(
          `messages[${start}] (system) differs from the loop's instructions; the instructions were used instead`,
        );
      }
      start++;
    }
  }
  const messages = given.slice(start);
  if (input.goal !== undefined) return { goal: input.goal, messages, goalGiven: true, warnings };
  const lastUser = messages.findLast((message) => message.role === 'user');
  return { goal: lastUser?.content ?? '', messages, goalGiven: false, warnings };
}

/**
 * The transcript as `result.messages`: a plain copy the caller can store and pass back into
 * `run({ messages })`. Calls the run stopped before answering (an approval, a denial, a cancel)
 * are answered with a note, so the copy is always a valid conversation.
 * @example
 * const next = await loop.run({ goal: 'And O-102?', messages: closedConversation(transcript, 'completed') });
 */
export function closedConversation(transcript: readonly Message[], stopReason: string): Message[] {
  const copy: Message[] = [];
  let open: string[] = [];
  const answerOpen = () => {
    for (const id of open) copy.push({ role: 'tool', toolCallId: id, content: notRunBeforeStopAnswer(stopReason) });
    open = [];
  };
  for (const message of transcript) {
    if (message.role === 'tool') {
      open = open.filter((id) => id !== message.toolCallId);
      copy.push({ ...message });
      continue;
    }
    answerOpen();
    if (message.role === 'assistant' && message.toolCalls !== undefined) {
      copy.push({ ...message, toolCalls: message.toolCalls.map((call) => ({ ...call })) });
      open = message.toolCalls.map((call) => call.id);
    } else copy.push({ ...message });
  }
  answerOpen();
  return copy;
}
