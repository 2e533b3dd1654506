/**
 * A journalled tool call's outcome: the text the model saw as it is written, the outcome served back on a
 * resume, and the tool's own check of a call whose outcome the journal does not hold.
 */
import { thrownMessage } from '../redaction/describe-thrown.js';
import { ToolCallError, type OutcomeLookup, type Tool, type ToolContext } from '../tools/index.js';
import type { ToolResultRecord } from './records.js';

export type ToolOutcome = ToolResultRecord['outcome'];

/** The tool's own answer for a call with an intent and no outcome; no answer, or a throw, is unknown. */
export async function lookUp(tool: Tool, args: unknown, context: ToolContext): Promise<OutcomeLookup> {
  if (!tool.checkOutcome) return { status: 'unknown' };
  try {
    const lookup = (await tool.checkOutcome(args, context)) as Partial<OutcomeLookup> | null | undefined;
    if (lookup?.status === 'done') return { status: 'done', result: lookup.result };
    return lookup?.status === 'not_done' ? { status: 'not_done' } : { status: 'unknown' };
  } catch {
    return { status: 'unknown' };
  }
}

/** The text the model saw (a string as is, anything else as JSON): served back, it reads the same. */
export function serialised(value: unknown): string {
  if (typeof value === 'string') return value;
  try {
    return (
      JSON.stringify(value, (_key, item: unknown) => (typeof item === 'bigint' ? item.toString() : item)) ?? 'null'
    );
  } catch (error) {
    return `[unserialisable result: ${thrownMessage(error)}]`;
  }
}

/** A journalled outcome served instead of running the call again: its text, or the error it threw. */
export function served(outcome: ToolOutcome): unknown {
  if (outcome.kind === 'returned') return outcome.text;
  if (outcome.callerFault) throw new ToolCallError({ message: outcome.message, blame: 'caller' });
  throw Object.assign(new Error(outcome.message), { name: outcome.name });
}
