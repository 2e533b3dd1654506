/**
 * Classifies the model's raw tool calls before anything runs: which tool, whether its
 * circuit is open, what the policy says, and whether the arguments parse and pass the zod schema.
 * Every non-ready call carries a stable error `key` (for the same-parse-error signal), a `message`
 * written for the model and a short `detail` for a person reading the trace.
 */
import type { z } from 'zod';
import { LoopConfigError } from '../../contracts/errors.js';
import type { ToolCallRequest } from '../../contracts/model.js';
import { describeZodIssues, zodIssuePath } from '../zod-issues.js';
import type { Tool } from './define-tool.js';
import { checkToolPolicy, type PolicyVerdict, type ToolPolicy } from './policy.js';
import type { ToolHealth } from './tool-health.js';
import {
  argumentsTooDeepNote,
  invalidArgumentsNote,
  malformedArgumentsNote,
  needsApprovalNote,
  policyDeniedNote,
  toolUnavailableNote,
  unknownToolNote,
} from '../prompts.js';

/**
 * How a call was classified; only `ready` calls are run.
 * @example
 * const runnable = prepared.filter((call) => call.status === 'ready');
 */
export type PreparedCallStatus = 'ready' | 'invalid' | 'denied' | 'needs_approval' | 'unavailable';

/**
 * One tool call, classified.
 * @example
 * const [call] = prepareToolCalls(response.toolCalls, { tools, policy, health });
 * if (call.status !== 'ready') messages.push({ role: 'tool', toolCallId: call.request.id, content: call.error!.message });
 */
export interface PreparedCall {
  request: ToolCallRequest;
  /** undefined only when the model named a tool that does not exist. */
  tool: Tool | undefined;
  status: PreparedCallStatus;
  /** The schema's parsed output when the arguments are valid; otherwise the raw parsed JSON, or undefined if it did not parse. */
  args: unknown;
  /**
   * null when ready. `key` is stable across repeats of the same mistake; `message` is for the model;
   * `detail` says what was wrong in one line, for people reading the trace (`order_id: expected an order
   * id like O-100`); a call restored from a durable journal has none (it is not persisted).
   */
  error: { key: string; message: string; detail?: string } | null;
}

/**
 * What `prepareToolCalls` needs to know.
 * @example
 * const options: PrepareToolCallsOptions = { tools: new Map([[tool.name, tool]]), policy: undefined, health: new ToolHealth() };
 */
export interface PrepareToolCallsOptions {
  tools: ReadonlyMap<string, Tool>;
  policy: ToolPolicy | undefined;
  health: ToolHealth;
  /** Passed to the policy's `decide` hook with each call's id. */
  runId?: string;
}

type ArgumentCheck =
  { valid: true; args: unknown } | { valid: false; args: unknown; key: string; message: string; detail: string };

/**
 * Classifies each call, in order of precedence:
 * 1. unknown tool → `invalid` (`unknown_tool:<name>`; the message lists the available tools);
 * 2. circuit open → `unavailable` (nothing else matters while the tool is withheld);
 * 3. policy `deny` → `denied`, even when the arguments are invalid: a forbidden call is not worth repairing;
 * 4. malformed JSON or a schema failure → `invalid` (`malformed_arguments:<name>`,
 *    `invalid_arguments:<name>:<path>`), so the model can fix it;
 * 5. policy `needs_approval` → `needs_approval`, only once the arguments are valid, so a person is
 *    never asked to approve a call that could not run;
 * 6. otherwise `ready`.
 * The policy's `decide` hook sees the schema's parsed output; when the arguments are invalid only the
 * access lists are consulted, since the hook is promised well-formed arguments.
 * @example
 * const prepared = prepareToolCalls(response.toolCalls, { tools, policy: config.policy, health });
 * const ready = prepared.filter((call) => call.status === 'ready');
 */
export function prepareToolCalls(calls: readonly ToolCallRequest[], options: PrepareToolCallsOptions): PreparedCall[] {
  return calls.map((request) => prepareToolCall(request, options));
}

function prepareToolCall(
  request: ToolCallRequest,
  { tools, policy, health, runId = '' }: PrepareToolCallsOptions,
): PreparedCall {
  const tool = tools.get(request.name);
  if (!tool) {
    const parsed = parseJson(request.arguments);
    const error = {
      key: `unknown_tool:${request.name}`,
      message: unknownToolNote(request.name, [...tools.keys()]),
      detail: 'no tool of that name',
    };
    return { request, tool, status: 'invalid', args: parsed.ok ? parsed.value : undefined, error };
  }
  const checked = checkArguments(tool, request.arguments);
  if (health.isOpen(tool.name)) {
    const message = toolUnavailableNote(tool.name, health.threshold);
    return {
      request,
      tool,
      status: 'unavailable',
      args: checked.args,
      error: { key: `tool_unavailable:${tool.name}`, message, detail: 'withheld: its circuit is open' },
    };
  }
  const verdict: PolicyVerdict = checked.valid
    ? checkToolPolicy(policy, tool, checked.args, { runId, callId: request.id })
    : checkToolPolicy(policy && { allow: policy.allow, requireApproval: policy.requireApproval }, tool, checked.args);
  if (verdict === 'deny') {
    const message = policyDeniedNote(tool.name, tool.access);
    return {
      request,
      tool,
      status: 'denied',
      args: checked.args,
      error: { key: `permission_denied:${tool.name}`, message, detail: 'not permitted by the tool policy' },
    };
  }
  if (!checked.valid) {
    return {
      request,
      tool,
      status: 'invalid',
      args: checked.args,
      error: { key: checked.key, message: checked.message, detail: checked.detail },
    };
  }
  if (verdict === 'needs_approval') {
    const message = needsApprovalNote(tool.name, tool.access);
    return {
      request,
      tool,
      status: 'needs_approval',
      args: checked.args,
      error: { key: `needs_approval:${tool.name}`, message, detail: "waits for a person's approval" },
    };
  }
  return { request, tool, status: 'ready', args: checked.args, error: null };
}

/** Where JSON.parse gave up, without the text it sometimes quotes (`..."password": hunter2"... is not valid JSON`). */
function jsonProblem(message: string): string {
  if (!message.includes('"')) return message;
  const position = /position (\d+)/.exec(message)?.[1];
  return position === undefined ? 'a syntax error in JSON' : `a syntax error in JSON at position ${position}`;
}

function parseJson(text: string): { ok: true; value: unknown } | { ok: false; message: string } {
  // Some OpenAI-compatible servers send an empty string for a call without arguments.
  if (text.trim() === '') return { ok: true, value: {} };
  try {
    return { ok: true, value: JSON.parse(text) as unknown };
  } catch (error) {
    return { ok: false, message: (error as Error).message };
  }
}

function checkArguments(tool: Tool, text: string): ArgumentCheck {
  const parsed = parseJson(text);
  if (!parsed.ok) {
    return {
      valid: false,
      args: undefined,
      key: `malformed_arguments:${tool.name}`,
      message: malformedArgumentsNote(tool.name, parsed.message),
      // Not the parser's message: V8 quotes the text around the error, which may hold a secret.
      detail: `not valid JSON (${jsonProblem(parsed.message)})`,
    };
  }
  let result: z.ZodSafeParseResult<unknown>;
  try {
    result = tool.input.safeParse(parsed.value);
  } catch (error) {
    // Nesting deep enough to overflow the validator's stack is the model's doing, and it can send flatter arguments.
    if (error instanceof RangeError) {
      return {
        valid: false,
        args: parsed.value,
        key: `arguments_too_deep:${tool.name}`,
        message: argumentsTooDeepNote(tool.name),
        detail: 'nested too deeply to validate',
      };
    }
    // An async refinement (or a throwing one) is a bug in the tool, which the model cannot repair.
    throw new LoopConfigError({
      issues: [
        {
          path: `tools.${tool.name}.input`,
          message: `could not validate arguments synchronously: ${(error as Error).message}`,
        },
      ],
      cause: error,
    });
  }
  if (result.success) return { valid: true, args: result.data };
  const [firstIssue] = result.error.issues;
  return {
    valid: false,
    args: parsed.value,
    key: `invalid_arguments:${tool.name}:${zodIssuePath(firstIssue?.path ?? [])}`,
    message: invalidArgumentsNote(tool.name, describeZodIssues(result.error.issues)),
    detail: describeZodIssues(result.error.issues).join('; '),
  };
}
