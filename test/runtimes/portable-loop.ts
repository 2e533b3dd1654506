/**
 * The loop the runtime tests run outside Node: only `loopstate` and `loopstate/testing`, as a browser app, a Bun
 * or a Deno script would import them. It touches what depends on the runtime: tools and their validation, the
 * evaluators, no-progress detection (a repeated call, hashed by the engine's own digest), and a durable run on the
 * memory store that stops for approval and resumes (run ids, lease owners, the argument hash). It prints one line:
 * `loopstate-result <json>`.
 */
import { z } from 'zod';
import { createLoop, defineTool, evaluators, memoryStore } from 'loopstate';
import { reply, scriptedModel, toolCall, virtualClock } from 'loopstate/testing';

const lookup = defineTool({
  name: 'lookup',
  description: 'Read an order.',
  input: z.object({ order_id: z.string() }),
  access: 'read',
  execute: ({ order_id }) => ({ order_id, status: 'shipped' }),
});
const refund = defineTool({
  name: 'refund',
  description: 'Refund an order.',
  input: z.object({ order_id: z.string() }),
  access: 'destructive',
  execute: ({ order_id }) => ({ refunded: order_id }),
});

async function main() {
  const answered = await createLoop({
    model: scriptedModel([toolCall('lookup', { order_id: 'O-1' }), reply('{"order_id":"O-1","status":"shipped"}')]),
    tools: [lookup],
    evaluate: [evaluators.schema(z.object({ order_id: z.string(), status: z.string() }))],
    clock: virtualClock(),
  }).run({ goal: 'Where is O-1?' });

  const looping = await createLoop({
    model: scriptedModel(Array.from({ length: 4 }, () => toolCall('lookup', { order_id: 'O-2' }))),
    tools: [lookup],
    noProgress: { repeatedToolCall: 2 },
    clock: virtualClock(),
  }).run({ goal: 'Where is O-2?' });

  const store = memoryStore();
  const refunds = createLoop({
    model: scriptedModel([toolCall('refund', { order_id: 'O-3' }), reply('Refunded O-3.')]),
    tools: [refund],
    store,
    clock: virtualClock(),
  });
  const waiting = await refunds.run({ goal: 'Refund O-3' });
  const [pending] = waiting.pendingApprovals;
  const approved = await refunds.resume(waiting.runId, {
    approvals: { [pending!.callId]: { approve: true, argumentsHash: pending!.argumentsHash } },
  });

  return {
    answered: { stopReason: answered.stopReason, output: answered.output },
    looping: { stopReason: looping.stopReason, detail: looping.detail },
    durable: {
      waiting: waiting.stopReason,
      argumentsHash: pending!.argumentsHash,
      runId: waiting.runId,
      approved: approved.stopReason,
      output: approved.output,
    },
  };
}

main().then(
  (result) => console.log(`loopstate-result ${JSON.stringify(result)}`),
  (error: unknown) =>
    console.log(
      `loopstate-error ${error instanceof Error ? `${error.name}: ${error.message}\n${error.stack ?? ''}` : String(error)}`,
    ),
);
