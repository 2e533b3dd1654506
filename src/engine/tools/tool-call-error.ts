/**
 * An error a tool's `execute` throws to say whose fault the failure was. A caller's fault (bad input,
 * not found, not allowed for this user) is answered to the model like any error but is not a health
 * failure: it says nothing about whether the tool works, so it never opens the tool's circuit breaker.
 */
import { LoopstateError } from '../../contracts/errors.js';

/**
 * Whose fault a failed tool call was: `caller` (the arguments or the request) or `tool` (the tool or its backend).
 * @example
 * const blame: ToolFailureBlame = response.status === 404 ? 'caller' : 'tool';
 */
export type ToolFailureBlame = 'caller' | 'tool';

/** Shared by every installed copy of loopstate, so a tool built against another copy is understood too. */
const TOOL_CALL_ERROR_BRAND = Symbol.for('loopstate.ToolCallError');

/**
 * Thrown from a tool's `execute` to report a failure with its blame (default `tool`). Its `code` is
 * always `tool_call_failed`, one of loopstate's codes; the tool's own name for the failure goes in `toolCode`.
 * @example
 * execute: async ({ user_id }) => {
 *   const user = await db.findUser(user_id);
 *   if (!user) throw new ToolCallError({ message: `no such user ${user_id}`, blame: 'caller', toolCode: 'not_found' });
 *   return user;
 * }
 */
export class ToolCallError extends LoopstateError {
  /** The brand `isCallerFault` recognises across installed copies. */
  readonly [TOOL_CALL_ERROR_BRAND] = true;
  readonly blame: ToolFailureBlame;
  /** The tool's own code for the failure (`not_found`, `quota_exceeded`): free text, unlike the closed `code`. */
  readonly toolCode: string | undefined;
  constructor({
    message,
    blame = 'tool',
    toolCode,
    cause,
  }: {
    message: string;
    blame?: ToolFailureBlame;
    toolCode?: string;
    cause?: unknown;
  }) {
    super({ code: 'tool_call_failed', message, cause });
    this.blame = blame;
    this.toolCode = toolCode;
  }
}

/**
 * True when a tool's thrown error is a `ToolCallError` (of any installed copy) blaming the caller;
 * never throws, even on an error with throwing getters.
 * @example
 * isCallerFault(new ToolCallError({ message: 'no such user', blame: 'caller' })) // true
 */
export function isCallerFault(error: unknown): boolean {
  try {
    if (typeof error !== 'object' || error === null) return false;
    const candidate = error as Record<PropertyKey, unknown>;
    return candidate[TOOL_CALL_ERROR_BRAND] === true && candidate.blame === 'caller';
  } catch {
    return false;
  }
}
