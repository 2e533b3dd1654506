/**
 * `loopstate/mcp` over HTTP against real MCP servers on 127.0.0.1: Streamable HTTP with a bearer token
 * (read, approval once across `loop.resume`, cancel on the tool timeout, a server that dies mid-call,
 * the session ended by `close()`, the token redacted), and an old HTTP+SSE server reached by the fallback.
 */
import { afterEach, describe, expect, it, vi } from 'vitest';
import { createLoop, memoryStore } from 'loopstate';
import { connectMcp, type McpConnection } from 'loopstate/mcp';
import { reply, scriptedModel, toolCall } from 'loopstate/testing';
import type { Tool } from '@modelcontextprotocol/sdk/types.js';
import {
  startRawToolsServer,
  startSseOnlyServer,
  startStreamableServer,
  type TestMcpServer,
} from '../support/mcp-http-servers.js';

const token = 'mcp_tok_8c1d2e3f4a5b6c7d';
const servers: TestMcpServer[] = [];
const connections: McpConnection[] = [];
afterEach(async () => {
  await Promise.all(connections.splice(0).map((connection) => connection.close()));
  await Promise.all(servers.splice(0).map((server) => server.close()));
});

async function streamable(timeoutMs = 2_000): Promise<{ server: TestMcpServer; connection: McpConnection }> {
  const server = await startStreamableServer(token);
  servers.push(server);
  const connection = await connectMcp(
    { url: server.url, headers: { Authorization: `Bearer ${token}` } },
    { timeoutMs },
  );
  connections.push(connection);
  return { server, connection };
}

const toolMessages = (messages: readonly { role: string; content?: unknown }[]) =>
  messages.filter((message) => message.role === 'tool').map((message) => message.content);

describe('connectMcp over Streamable HTTP', () => {
  it('runs a read tool with the headers given, and redacts the header token everywhere', async () => {
    const { server, connection } = await streamable();
    expect(connection.transport).toBe('streamable-http');
    expect(connection.pid).toBeNull();
    const result = await createLoop({
      model: scriptedModel([
        toolCall([
          { name: 'get_order', args: { order_id: 'O-101' } },
          { name: 'whoami', args: {} },
        ]),
        reply('Shipped.'),
      ]),
      tools: connection.tools,
    }).run({ goal: 'Where is O-101?' });
    expect(result.stopReason).toBe('completed');
    expect(toolMessages(result.messages)).toEqual(['O-101 has shipped', 'running with token [redacted]']);
    expect(JSON.stringify(result)).not.toContain(token);
    expect(server.events).toEqual(expect.arrayContaining(['called:get_order:O-101', 'called:whoami']));
    expect(new Set(server.authorizations)).toEqual(new Set([`Bearer ${token}`]));
  });

  it('stops a destructive tool for approval; after loop.resume the server runs it exactly once', async () => {
    const { server, connection } = await streamable();
    const loop = createLoop({
      model: scriptedModel([toolCall('refund_order', { order_id: 'O-3', reason: 'late' }), reply('Refunded.')]),
      tools: connection.tools,
      store: memoryStore(),
    });
    const stopped = await loop.run({ goal: 'Refund O-3', runId: 'http-refund' });
    expect(stopped.status).toBe('needs_human');
    const callId = stopped.pendingApprovals[0]!.callId;
    const done = await loop.resume('http-refund', { approvals: { [callId]: { approve: true } } });
    expect(done.stopReason).toBe('completed');
    expect(server.events.filter((event) => event.startsWith('called:refund_order'))).toEqual([
      'called:refund_order:O-3',
    ]);
  });

  it('sends notifications/cancelled when the tool timeout strikes', async () => {
    const { server, connection } = await streamable();
    const result = await createLoop({
      model: scriptedModel([toolCall('slow_report', {}), reply('Timed out.')]),
      tools: connection.tools,
    }).run({ goal: 'Build the report' });
    expect(result.trace.find((event) => event.type === 'tool-end')).toMatchObject({ status: 'timeout' });
    await vi.waitFor(() => expect(server.events).toContain('cancelled:slow_report'));
  });

  it('ends with a named stop, not a hang, when the server dies mid-call', async () => {
    // A tool timeout far past the test's: the in-flight call must fail because its stream dropped.
    const { server, connection } = await streamable(600_000);
    const running = createLoop({
      model: scriptedModel([toolCall('hang', {}), toolCall('hang', {}), toolCall('hang', {}), reply('unreachable')]),
      tools: connection.tools,
      tasks: [{ id: 'main', prompt: 'Use the hang tool', requires: ['hang'] }],
    }).run({ goal: 'Hang' });
    await vi.waitFor(() => expect(server.events).toContain('started:hang'));
    server.kill();
    const result = await running;
    expect(result.stopReason).toBe('tool_unavailable');
    const [inFlight, ...later] = toolMessages(result.messages) as string[];
    expect(inFlight).toMatch(
      /^Tool hang failed: the connection to the MCP server "http:\/\/127\.0\.0\.1:\d+\/mcp" dropped$/,
    );
    expect(later).toHaveLength(2);
    for (const answer of later) expect(answer).toMatch(/^Tool hang failed: /);
  });

  it('hears tools/list_changed on the notification stream, and the next run offers the new tool', async () => {
    const { server, connection } = await streamable();
    const loop = createLoop({
      model: scriptedModel([
        toolCall('unlock_returns', {}),
        reply('Enabled.'),
        toolCall('start_return', { order_id: 'O-4' }),
        reply('Started.'),
      ]),
      tools: connection.tools,
    });
    expect((await loop.run({ goal: 'Enable returns' })).stopReason).toBe('completed');
    await vi.waitFor(() => expect(connection.tools.map((tool) => tool.name)).toContain('start_return'));
    expect((await loop.run({ goal: 'Start a return for O-4' })).stopReason).toBe('completed');
    expect(server.events).toContain('called:start_return:O-4');
  });

  it('ends the session on close()', async () => {
    const { server, connection } = await streamable();
    await connection.close();
    await vi.waitFor(() => expect(server.events).toContain('session-closed'));
  });

  it('refuses a server that answers 401, without quoting the token sent', async () => {
    const server = await startStreamableServer(token);
    servers.push(server);
    const wrong = 'mcp_tok_wrong_0000000000';
    await expect(connectMcp({ url: server.url, headers: { Authorization: `Bearer ${wrong}` } })).rejects.toSatisfy(
      (error: Error & { code?: string }) =>
        error.code === 'mcp_connection_failed' && error.message.includes('401') && !error.message.includes(wrong),
    );
  });
});

describe('connectMcp to an old HTTP+SSE server', () => {
  it('falls back to SSE when Streamable HTTP is refused with a 4xx, and runs its tools', async () => {
    const server = await startSseOnlyServer();
    servers.push(server);
    const connection = await connectMcp({ url: server.url });
    connections.push(connection);
    expect(connection.transport).toBe('sse');
    const result = await createLoop({
      model: scriptedModel([toolCall('get_order', { order_id: 'O-2' }), reply('Shipped.')]),
      tools: connection.tools,
    }).run({ goal: 'Where is O-2?' });
    expect(result.stopReason).toBe('completed');
    expect(server.events).toEqual(['sse-connected', 'called:get_order:O-2']);
  });
});

describe('connectMcp to a server that lists raw JSON Schemas, page by page', () => {
  const address = { type: 'object', properties: { zip: { type: 'string', minLength: 5 } }, required: ['zip'] };
  const tools: Tool[] = [
    {
      name: 'ship',
      description: 'Ship to an address',
      inputSchema: {
        type: 'object',
        properties: {
          to: { $ref: '#/$defs/Address' },
          speed: { enum: ['slow', 'fast'] },
          note: { type: ['string', 'null'] },
        },
        required: ['to', 'speed'],
        additionalProperties: false,
        $defs: { Address: address },
      },
      annotations: { destructiveHint: false },
    },
    {
      name: 'legacy',
      description: 'An old-style schema',
      inputSchema: {
        $schema: 'http://json-schema.org/draft-07/schema#',
        type: 'object',
        properties: { to: { $ref: '#/definitions/Address' } },
        definitions: { Address: address },
      },
      annotations: { readOnlyHint: true },
    },
    {
      name: 'odd',
      description: 'A schema zod cannot convert',
      inputSchema: { type: 'object', properties: { x: { not: { type: 'string' } } } },
      annotations: { readOnlyHint: true },
    },
  ];

  it('follows nextCursor to the last page and checks arguments from each schema, or says it cannot', async () => {
    const server = await startRawToolsServer(tools, 2);
    servers.push(server);
    const connection = await connectMcp({ url: server.url });
    connections.push(connection);
    expect(connection.tools.map((tool) => tool.name)).toEqual(['ship', 'legacy', 'odd']);
    expect(server.events).toEqual(['listed:0', 'listed:2']);
    expect(connection.warnings).toEqual([
      expect.stringMatching(/^the arguments of the MCP tool odd are checked by the server only: /),
    ]);
    expect(connection.tools[0]!.spec.parameters).toEqual(tools[0]!.inputSchema);

    const model = scriptedModel([
      toolCall('ship', { to: { zip: '12' }, speed: 'warp', extra: true }),
      toolCall([
        { name: 'ship', args: { to: { zip: '12345' }, speed: 'fast', note: null } },
        { name: 'legacy', args: { to: { zip: '54321' } } },
        { name: 'odd', args: { x: 1 } },
      ]),
      reply('Shipped.'),
    ]);
    const result = await createLoop({ model, tools: connection.tools }).run({ goal: 'Ship it' });
    expect(result.stopReason).toBe('completed');
    const [repair, ...answers] = toolMessages(result.messages) as string[];
    for (const field of ['to.zip', 'speed', 'extra']) expect(repair).toContain(field);
    expect(answers).toEqual([
      '{"received":{"to":{"zip":"12345"},"speed":"fast","note":null}}',
      '{"received":{"to":{"zip":"54321"}}}',
      '{"received":{"x":1}}',
    ]);
    expect(server.events.filter((event) => event.startsWith('called:'))).toEqual([
      'called:ship',
      'called:legacy',
      'called:odd',
    ]);
  });

  it('refresh() lists the tools again', async () => {
    const server = await startRawToolsServer(tools, 10);
    servers.push(server);
    const connection = await connectMcp({ url: server.url }, { exclude: ['odd'] });
    connections.push(connection);
    const before = connection.tools;
    expect(await connection.refresh()).toBe(before);
    expect(before.map((tool) => tool.name)).toEqual(['ship', 'legacy']);
    expect(server.events).toEqual(['listed:0', 'listed:0']);
  });
});
