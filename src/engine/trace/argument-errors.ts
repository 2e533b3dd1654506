/**
 * What an argument repair sends back to the model, as the `retry` trace event names it: each call of the
 * reply answered with an error instead of run, with its one-line detail (zod's field errors) redacted and
 * cut to a summary's length, so the trace says which field was wrong without copying the arguments.
 */
import type { Redactor } from '../redaction/redact.js';
import type { PreparedCall } from '../tools/index.js';
import { summarize } from './trace-event.js';
import type { TracedArgumentError } from '../../contracts/trace-schema.js';

/** A reply can hold any number of bad calls; the event names the first few (its step-end lists them all). */
export const MAX_TRACED_ARGUMENT_ERRORS = 5;

/**
 * The invalid (or withheld) calls among `calls`, in reply order, at most `MAX_TRACED_ARGUMENT_ERRORS`.
 * @example
 * tracedArgumentErrors(session.pendingCalls, config.redact) // [{ callId: 'c1', name: 'get_order_status', error: 'order_id: expected an order id like O-100' }]
 */
export function tracedArgumentErrors(
  calls: readonly { call: PreparedCall }[],
  redactor: Redactor,
): TracedArgumentError[] {
  const errors: TracedArgumentError[] = [];
  for (const { call } of calls) {
    if (errors.length === MAX_TRACED_ARGUMENT_ERRORS) break;
    if ((call.status !== 'invalid' && call.status !== 'unavailable') || call.error === null) continue;
    // A call restored from a durable journal has no detail; its key still names the tool and the field.
    // Ids and names are the model's text too: bounded like the error (only an overlong one changes).
    const bounded = (text: string) => (text.length <= 200 ? text : summarize(text, redactor));
    errors.push({
      callId: bounded(call.request.id),
      name: bounded(call.request.name),
      error: summarize(call.error.detail ?? call.error.key, redactor),
    });
  }
  return errors;
}
