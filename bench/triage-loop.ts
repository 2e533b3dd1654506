/**
 * A support-ticket triage loop with 22 tools, the loop `bench/verify-speed.ts` times `verify` on: 12
 * read-only lookups, 6 writes (2 of them idempotent), 4 destructive actions behind a person's approval,
 * a schema evaluator with reflection retries, and the limits a service would set. It is never run: the
 * model is a stand-in that `verify` only reads the id and price of.
 */
import { z } from 'zod';
import { createLoop, defineTool, evaluators, type ToolAccess } from 'loopstate';
import { scriptedModel } from 'loopstate/testing';

const tool = (name: string, access: ToolAccess, idempotent = access === 'read') =>
  defineTool({
    name,
    description: `Triage tool ${name.replaceAll('_', ' ')}.`,
    input: z.object({ ticketId: z.string() }),
    access,
    idempotent,
    execute: ({ ticketId }) => `${name} done for ${ticketId}`,
  });

const reads = [
  'get_ticket',
  'get_customer',
  'get_orders',
  'get_invoices',
  'search_knowledge_base',
  'get_shipping_status',
  'get_account_flags',
  'get_recent_tickets',
  'get_product',
  'get_sla',
  'get_agent_notes',
  'get_refund_policy',
].map((name) => tool(name, 'read'));
const writes = [
  tool('add_note', 'write'),
  tool('set_priority', 'write', true),
  tool('assign_team', 'write', true),
  tool('send_reply', 'write'),
  tool('create_follow_up', 'write'),
  tool('tag_ticket', 'write'),
];
const destructive = ['issue_refund', 'cancel_order', 'close_account', 'delete_attachment'].map((name) =>
  tool(name, 'destructive'),
);

export const triageTools = [...reads, ...writes, ...destructive];

export default createLoop({
  model: scriptedModel([]),
  instructions: 'Triage the ticket: look it up, set its priority and team, reply, and answer with JSON.',
  tools: triageTools,
  evaluate: evaluators.schema(z.object({ priority: z.enum(['low', 'normal', 'high']), team: z.string() })),
  policy: { requireApproval: ['destructive'] },
  limits: { maxSteps: 25, maxRetries: 2, deadlineMs: 120_000, maxCostUsd: 0.5 },
  prices: { scripted: { inputPerMillion: 0.4, outputPerMillion: 1.6 } },
});
