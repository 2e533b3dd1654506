/**
 * Seed 000's order assistant: answer an order-status question with a read-only lookup whose argument
 * must look like `O-100`, never guess when the lookup says `not_found`, and stop within four model
 * decisions. Offline, the scripted model first sends a malformed id (the field error goes back to it and
 * it repairs the call once), then looks the order up and answers in JSON.
 *
 *   npm start                                   # loopstate run order-status
 *   loopstate run examples/order-status.ts      # the same, as a loop file
 */
import { z } from 'zod';
import { defineTool, evaluators, type LoopConfig, type Model } from 'loopstate';
import { reply, scriptedModel, toolCall } from 'loopstate/testing';
import { createLoop } from 'loopstate';

/** The question the offline run answers; `loopstate run` reads it as the loop file's goal. */
export const goal = 'What is the status of order O-101?';

// Local demo data; a production tool calls a service with auth, timeout and audit.
const ORDERS: Record<string, string> = { 'O-100': 'paid', 'O-101': 'shipped' };

export const orderAnswer = z.object({
  order_id: z.string(),
  status: z.enum(['paid', 'shipped', 'not_found']),
  answer: z.string().min(1),
});
type OrderAnswer = z.infer<typeof orderAnswer>;

/**
 * The loop's config around `model`. The lookup remembers what it returned, so the evaluator can refuse
 * an answer whose status the lookup did not say (a guess), `not_found` included.
 */
export function orderLoopConfig(model: Model) {
  const lookedUp = new Map<string, string>();
  const getOrderStatus = defineTool({
    name: 'get_order_status',
    description: 'Read-only lookup of an order status. order_id looks like O-100; returns not_found when unknown.',
    input: z.object({ order_id: z.string().regex(/^O-\d+$/, 'expected an order id like O-100') }),
    access: 'read',
    timeoutMs: 2_000,
    execute: ({ order_id }) => {
      const status = ORDERS[order_id] ?? 'not_found';
      lookedUp.set(order_id, status);
      return { order_id, status };
    },
  });
  return {
    model,
    instructions:
      'Answer order status questions. Call the tool only when the user gives an explicit order id; never guess on not_found; ' +
      'once the lookup returned, answer with JSON {"order_id", "status", "answer"} and stop.',
    tools: [getOrderStatus],
    evaluate: [
      evaluators.schema(orderAnswer),
      evaluators.rule(
        (answer: OrderAnswer) => answer.answer.includes(answer.order_id),
        'the answer must name the order id',
      ),
      evaluators.rule(
        (answer: OrderAnswer) => lookedUp.get(answer.order_id) === answer.status,
        'the status must be the one the lookup returned; look the order up, never guess',
      ),
    ],
    limits: { maxSteps: 4, maxRetries: 2, deadlineMs: 30_000, maxCostUsd: 0.05 },
  } satisfies LoopConfig;
}

export function createOrderLoop(model: Model) {
  return createLoop(orderLoopConfig(model));
}

/**
 * The offline script for `orderId`: a malformed id first (repaired after its field error), the lookup,
 * then the answer in the required shape; for an unknown order the answer says so instead of guessing.
 */
export function offlineOrderModel(orderId = 'O-101'): Model {
  const status = ORDERS[orderId] ?? 'not_found';
  const answer =
    status === 'not_found'
      ? `I could not find order ${orderId}; please check the id.`
      : `Order ${orderId} has ${status === 'shipped' ? 'shipped' : 'been paid'}.`;
  return scriptedModel([
    toolCall(
      'get_order_status',
      { order_id: orderId.replace(/^O-/, '') },
      { usage: { inputTokens: 180, outputTokens: 22 } },
    ),
    toolCall('get_order_status', { order_id: orderId }, { usage: { inputTokens: 230, outputTokens: 22 } }),
    reply(JSON.stringify({ order_id: orderId, status, answer }), { usage: { inputTokens: 290, outputTokens: 31 } }),
  ]);
}

/** A fresh offline config (the scripted model is used up by one run). */
export const offlineConfig = () => orderLoopConfig(offlineOrderModel());

export default offlineConfig();
