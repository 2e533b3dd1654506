/**
 * `loopstate/mcp` over HTTP against real MCP servers on 127.0.0.1: Streamable HTTP with a bearer token
 * (read, approval once across `loop.resume`, cancel on the tool timeout, a server that dies mid-call,
 * the session ended by `close()`, the token redacted), and an old HTTP+SSE server reached by the fallback.
 */
import { afterEach, describe, expect, it, vi } from 'vitest';
import { createLoop, memoryStore } from 'loopstate';
import { connectMcp, type McpConnection } from 'loopstate/mcp';
import { reply, scriptedModel, toolCall } from 'loopstate/testing';
import { startSseOnlyServer, startStreamableServer, type TestMcpServer } from '../support/mcp-http-servers.js';

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
