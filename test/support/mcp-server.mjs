/**
 * The MCP server the `loopstate/mcp` tests talk to, written with the SDK's own `McpServer`: an order
 * desk with a read tool, a destructive refund (counted here, on the server side), a write tool, an
 * unannotated tool, one that answers `isError`, a slow one that records `notifications/cancelled`,
 * one that hangs (to be killed mid-call), rich content, a tool that echoes its secret environment
 * and one that adds a tool (so the server sends `tools/list_changed`).
 */
import { Buffer } from 'node:buffer';
import { clearTimeout, setTimeout } from 'node:timers';
import { McpServer } from '@modelcontextprotocol/sdk/server/mcp.js';
import { z } from 'zod';

/**
 * The server, recording what it saw in order (`called:<tool>`, `cancelled:<tool>`, `started:<tool>`).
 * Plain JavaScript so a stdio child starts without the TypeScript hooks (seconds on a busy machine).
 * @param {{ push(event: string): void }} events
 * @param {{ secret?: string }} [options]
 */
export function buildMcpServer(events, options = {}) {
  const server = new McpServer({ name: 'order-desk', version: '1.0.0' });
  const orderId = z.string().regex(/^O-\d+$/, 'an order id such as O-101');

  server.registerTool(
    'get_order',
    {
      description: 'Look up the status of an order',
      inputSchema: { order_id: orderId },
      annotations: { readOnlyHint: true },
    },
    ({ order_id }) => {
      events.push(`called:get_order:${order_id}`);
      return { content: [{ type: 'text', text: `${order_id} has shipped` }] };
    },
  );
  server.registerTool(
    'refund_order',
    {
      description: 'Refund an order in full',
      inputSchema: { order_id: orderId, reason: z.string() },
      outputSchema: { refunded: z.boolean(), order_id: z.string() },
      annotations: { readOnlyHint: false, destructiveHint: true },
    },
    ({ order_id }) => {
      events.push(`called:refund_order:${order_id}`);
      const refund = { refunded: true, order_id };
      return { content: [{ type: 'text', text: JSON.stringify(refund) }], structuredContent: refund };
    },
  );
  server.registerTool(
    'tag_order',
    {
      description: 'Add a tag to an order',
      inputSchema: { order_id: orderId, tag: z.enum(['vip', 'late']) },
      annotations: { destructiveHint: false, idempotentHint: true },
    },
    ({ order_id, tag }) => {
      events.push(`called:tag_order:${order_id}:${tag}`);
      return { content: [{ type: 'text', text: `tagged ${order_id} ${tag}` }] };
    },
  );
  server.registerTool(
    'archive_order',
    { description: 'Archive an order', inputSchema: { order_id: orderId } },
    ({ order_id }) => {
      events.push(`called:archive_order:${order_id}`);
      return { content: [{ type: 'text', text: `archived ${order_id}` }] };
    },
  );
  server.registerTool(
    'warehouse_status',
    { description: 'Ask the warehouse', annotations: { readOnlyHint: true } },
    () => {
      events.push('called:warehouse_status');
      return { content: [{ type: 'text', text: 'the warehouse system is offline' }], isError: true };
    },
  );
  server.registerTool(
    'slow_report',
    { description: 'Build a slow report', annotations: { readOnlyHint: true } },
    (extra) =>
      new Promise((resolve) => {
        events.push('started:slow_report');
        const timer = setTimeout(() => resolve({ content: [{ type: 'text', text: 'report' }] }), 60_000);
        extra.signal.addEventListener('abort', () => {
          clearTimeout(timer);
          events.push('cancelled:slow_report');
          resolve({ content: [{ type: 'text', text: 'cancelled' }] });
        });
      }),
  );
  server.registerTool(
    'hang',
    { description: 'Never answers', annotations: { readOnlyHint: true } },
    () =>
      new Promise(() => {
        events.push('started:hang');
      }),
  );
  server.registerTool(
    'hang_write',
    { description: 'Starts a change and never answers', annotations: { destructiveHint: false } },
    () =>
      new Promise(() => {
        events.push('started:hang_write');
      }),
  );
  server.registerTool(
    'order_photo',
    { description: 'A photo of the parcel', annotations: { readOnlyHint: true } },
    () => {
      events.push('called:order_photo');
      return {
        content: [
          { type: 'text', text: 'parcel of O-101' },
          { type: 'image', data: Buffer.alloc(12 * 1024, 7).toString('base64'), mimeType: 'image/png' },
          {
            type: 'resource',
            resource: { uri: 'file:///label.txt', mimeType: 'text/plain', text: 'LABEL '.repeat(100) },
          },
        ],
      };
    },
  );
  server.registerTool(
    'whoami',
    { description: 'Say which credentials the server runs with', annotations: { readOnlyHint: true } },
    () => {
      events.push('called:whoami');
      return { content: [{ type: 'text', text: `running with token ${options.secret ?? '(none)'}` }] };
    },
  );
  server.registerTool(
    'orders.export',
    { description: 'A name providers refuse', annotations: { readOnlyHint: true } },
    () => ({ content: [{ type: 'text', text: 'exported' }] }),
  );
  server.registerTool(
    'unlock_returns',
    { description: 'Enable the returns desk', annotations: { readOnlyHint: true } },
    () => {
      events.push('called:unlock_returns');
      // Registering a tool on a connected server sends notifications/tools/list_changed.
      server.registerTool(
        'start_return',
        { description: 'Start a return', inputSchema: { order_id: orderId }, annotations: { readOnlyHint: true } },
        ({ order_id }) => {
          events.push(`called:start_return:${order_id}`);
          return { content: [{ type: 'text', text: `return started for ${order_id}` }] };
        },
      );
      return { content: [{ type: 'text', text: 'returns desk enabled' }] };
    },
  );
  return server;
}
