/** The destructive `refund` tool of the durable-run tests: it records each refunded order in `refunds`, so a test counts side effects. */
import { z } from 'zod';
import { defineTool, type Tool } from 'loopstate';

export function refundTool(refunds: string[]): Tool {
  return defineTool({
    name: 'refund',
    description: 'Refund an order.',
    input: z.object({ order_id: z.string() }),
    access: 'destructive',
    execute: ({ order_id }) => {
      refunds.push(order_id);
      return { refunded: order_id };
    },
  });
}
