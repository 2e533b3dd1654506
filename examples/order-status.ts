/**
 * Seed 000's order assistant: answer an order-status question with one read-only tool call,
 * then stop. Runs offline on the scripted model; swap in a real model to run it for real.
 *
 *   npm start
 */
import { z } from 'zod';
import { createLoop, defineTool, evaluators, type Model } from '../src/index.js';
import { reply, scriptedModel, toolCall } from '../src/testing/index.js';
import { formatResult } from './format-result.js';

// Local demo data; a production tool calls a service with auth, timeout and audit.
const ORDERS: Record<string, string> = { 'O-100': 'paid', 'O-101': 'shipped' };

export const getOrderStatus = defineTool({
  name: 'get_order_status',
  description: 'Read-only lookup of an order status. order_id looks like O-100; returns not_found when unknown.',
  input: z.object({ order_id: z.string().regex(/^O-\d+$/, 'expected an order id like O-100') }),
  access: 'read',
  timeoutMs: 2_000,
  execute: ({ order_id }) => ({ order_id, status: ORDERS[order_id] ?? 'not_found' }),
});

export const orderAnswer = z.object({ order_id: z.string(), status: z.enum(['paid', 'shipped', 'not_found']), answer: z.string().min(1) });

/** The offline script: look the order up once, then answer in the required JSON shape. */
export function offlineOrderModel(): Model {
  return scriptedModel([
    toolCall('get_order_status', { order_id: 'O-101' }, { usage: { inputTokens: 180, outputTokens: 22 } }),
    reply(JSON.stringify({ order_id: 'O-101', status: 'shipped', answer: 'Order O-101 has shipped.' }), {
      usage: { inputTokens: 240, outputTokens: 31 },
    }),
  ]);
}

export function createOrderLoop(model: Model) {
  return createLoop({
    model,
    instructions:
      'Answer order status questions. Call the tool only when the user gives an explicit order id; never guess on not_found; ' +
      'once the lookup returned, answer with JSON {"order_id", "status", "answer"} and stop.',
    tools: [getOrderStatus],
    evaluate: [
      evaluators.schema(orderAnswer),
      evaluators.rule((answer: z.infer<typeof orderAnswer>) => answer.answer.includes(answer.order_id), 'the answer must name the order id'),
    ],
    limits: { maxSteps: 4, maxRetries: 2, deadlineMs: 30_000, maxCostUsd: 0.05 },
  });
}

/** The loop file's exports for `loopstate run` and `loopstate verify`: the offline loop and its goal. */
export default createOrderLoop(offlineOrderModel());
export const goal = 'What is the status of order O-101?';

const isMain = import.meta.url === `file://${process.argv[1]}`;
if (isMain) {
  const result = await createOrderLoop(offlineOrderModel()).run({ goal: 'What is the status of order O-101?' });
  console.log('loopstate example: order status (offline, scripted model)\n');
  console.log(formatResult(result));
  process.exitCode = result.status === 'succeeded' ? 0 : 1;
}
