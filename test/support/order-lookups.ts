/**
 * A read-only `lookup` tool and a model that looks up the given orders one per reply, then answers: the
 * loop the learning tests run durably (in process and on DBOS workers), counting every lookup that ran.
 */
import { z } from 'zod';
import { defineTool, type Model } from 'loopstate';

/** `lookup` (read, idempotent) pushes each id it reads to `ran`; the model asks for `orders` in turn, then says `answer`. */
export function orderLookups(orders: readonly string[], ran: string[], answer: string) {
  const lookup = defineTool({
    name: 'lookup',
    description: 'Read an order',
    input: z.object({ id: z.string() }),
    access: 'read',
    idempotent: true,
    execute: async ({ id }) => {
      ran.push(id);
      return { id, total: 40 };
    },
  });
  const model: Model = {
    id: 'order-lookups',
    generate: async ({ messages }) => {
      const usage = { inputTokens: 10, outputTokens: 5 };
      const given = messages.filter((message) => message.role === 'assistant').length;
      const id = orders[given];
      if (id === undefined) return { text: answer, toolCalls: [], usage };
      return { text: null, toolCalls: [{ id: `c${given}`, name: 'lookup', arguments: JSON.stringify({ id }) }], usage };
    },
  };
  return { lookup, model };
}
