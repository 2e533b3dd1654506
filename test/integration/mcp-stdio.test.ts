/**
 * `loopstate/mcp` against a real MCP server (the SDK's `McpServer`) started as a stdio child: access
 * from annotations, approval of a destructive tool across `loop.resume` (counted on the server),
 * `isError`, a tool timeout that cancels on the server, a server killed mid-call, argument repair,
 * content summaries, secrets, `tools/list_changed` and `close()`.
 */
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterEach, describe, expect, it, vi } from 'vitest';
import { createLoop, LoopConfigError, ToolHealth, type Tool, type TraceEvent } from 'loopstate';
import { connectMcp, type McpConnection } from 'loopstate/mcp';
import { sqliteStore } from 'loopstate/sqlite';
import { reply, scriptedModel, toolCall } from 'loopstate/testing';
import { eventsFileIn, orderDeskTarget, processState, serverEvents } from '../support/mcp-stdio.js';

const open: McpConnection[] = [];
afterEach(async () => {
  await Promise.all(open.splice(0).map((connection) => connection.close()));
});

async function orderDesk(
  options: Parameters<typeof connectMcp>[1] = {},
  env: Record<string, string> = {},
): Promise<{ connection: McpConnection; eventsFile: string }> {
  const eventsFile = eventsFileIn();
  const connection = await connectMcp(orderDeskTarget(eventsFile, env), options);
  open.push(connection);
  return { connection, eventsFile };
}

const toolNamed = (tools: readonly Tool[], name: string) => tools.find((tool) => tool.name === name)!;
const toolMessages = (messages: readonly { role: string; content?: unknown }[]) =>
  messages.filter((message) => message.role === 'tool').map((message) => message.content);

// Each test starts a server child that transpiles its TypeScript first: slow on a busy machine.
describe('connectMcp over stdio', { timeout: 60_000 }, () => {
  it('offers the server tools with access from their annotations, fail-closed', async () => {
    const { connection } = await orderDesk();
    expect(connection.transport).toBe('stdio');
    const summary = Object.fromEntries(connection.tools.map((tool) => [tool.name, [tool.access, tool.idempotent]]));
    expect(summary).toMatchObject({
      get_order: ['read', true],
      refund_order: ['destructive', false],
      tag_order: ['write', true],
      // No annotations at all: presumed destructive, as the MCP specification says.
      archive_order: ['destructive', false],
    });
    // A name no provider accepts is left out, and said so.
    expect(connection.tools.map((tool) => tool.name)).not.toContain('orders.export');
    expect(connection.warnings).toEqual([
      'the MCP tool "orders.export" is left out: providers accept 1-64 of letters, digits, "_" or "-" as a tool name',
    ]);
    expect(toolNamed(connection.tools, 'get_order').spec).toEqual({
      name: 'get_order',
      description: 'Look up the status of an order',
      parameters: {
        type: 'object',
        properties: { order_id: { type: 'string', pattern: '^O-\\d+$' } },
        required: ['order_id'],
      },
    });
  });

  it('runs a read tool in a loop and passes its text to the model', async () => {
    const { connection, eventsFile } = await orderDesk();
    const loop = createLoop({
      model: scriptedModel([toolCall('get_order', { order_id: 'O-101' }), reply('O-101 has shipped.')]),
      tools: connection.tools,
    });
    const result = await loop.run({ goal: 'Where is O-101?' });
    expect(result.stopReason).toBe('completed');
    expect(toolMessages(result.messages)).toEqual(['O-101 has shipped']);
    expect(serverEvents(eventsFile)).toEqual(['called:get_order:O-101']);
  });

  it('stops a destructive tool for approval and runs it exactly once after loop.resume, its structured content as JSON', async () => {
    const { connection, eventsFile } = await orderDesk();
    const store = sqliteStore({ path: join(eventsFile, '..', 'runs.db') });
    const loop = createLoop({
      model: scriptedModel([toolCall('refund_order', { order_id: 'O-7', reason: 'damaged' }), reply('Refunded O-7.')]),
      tools: connection.tools,
      store,
    });
    const stopped = await loop.run({ goal: 'Refund O-7', runId: 'refund-1' });
    expect(stopped.status).toBe('needs_human');
    expect(stopped.pendingApprovals).toEqual([
      expect.objectContaining({ tool: 'refund_order', args: { order_id: 'O-7', reason: 'damaged' } }),
    ]);
    expect(serverEvents(eventsFile)).toEqual([]);
    const [pending] = stopped.pendingApprovals;
    const done = await loop.resume('refund-1', { approvals: { [pending!.callId]: { approve: true } } });
    expect(done.stopReason).toBe('completed');
    expect(toolMessages(done.messages)).toEqual(['{"refunded":true,"order_id":"O-7"}']);
    // Approved again: the recorded result, no second refund.
    await loop.resume('refund-1', { approvals: { [pending!.callId]: { approve: true } } });
    expect(serverEvents(eventsFile)).toEqual(['called:refund_order:O-7']);
  });

  it('stops an unannotated tool for approval too, and runs it without approval once access says so', async () => {
    const guarded = await orderDesk();
    const script = () => scriptedModel([toolCall('archive_order', { order_id: 'O-9' }), reply('Archived.')]);
    const stopped = await createLoop({ model: script(), tools: guarded.connection.tools }).run({ goal: 'Archive O-9' });
    expect(stopped.status).toBe('needs_human');
    expect(serverEvents(guarded.eventsFile)).toEqual([]);

    const trusted = await orderDesk({ access: { archive_order: 'write' } });
    expect(toolNamed(trusted.connection.tools, 'archive_order').access).toBe('write');
    const done = await createLoop({ model: script(), tools: trusted.connection.tools }).run({ goal: 'Archive O-9' });
    expect(done.stopReason).toBe('completed');
    expect(serverEvents(trusted.eventsFile)).toEqual(['called:archive_order:O-9']);
  });

  it('gives an isError result to the model as a tool failure that tool health counts', async () => {
    const { connection } = await orderDesk();
    const toolHealth = new ToolHealth();
    const result = await createLoop({
      model: scriptedModel([toolCall('warehouse_status', {}), reply('The warehouse is offline.')]),
      tools: connection.tools,
      toolHealth,
    }).run({ goal: 'Is the warehouse up?' });
    expect(result.stopReason).toBe('completed');
    const [answer] = toolMessages(result.messages) as string[];
    expect(answer).toContain('the warehouse system is offline');
    expect(toolHealth.snapshot().warehouse_status).toMatchObject({ failures: 1, successes: 0 });
    const ended = result.trace.find((event) => event.type === 'tool-end');
    expect(ended).toMatchObject({ status: 'error' });
  });

  it('feeds field errors back for repair: the server sees only the repaired call', async () => {
    const { connection, eventsFile } = await orderDesk();
    const model = scriptedModel([
      toolCall('tag_order', { order_id: '101', tag: 'gold' }),
      toolCall('tag_order', { order_id: 'O-101', tag: 'vip' }),
      reply('Tagged.'),
    ]);
    const result = await createLoop({ model, tools: connection.tools }).run({ goal: 'Tag O-101 as vip' });
    expect(result.stopReason).toBe('completed');
    const [rejected] = toolMessages(result.messages) as string[];
    expect(rejected).toContain('order_id');
    expect(rejected).toContain('tag');
    expect(serverEvents(eventsFile)).toEqual(['called:tag_order:O-101:vip']);
  });

  it('cancels a slow call on the server when the tool timeout strikes', async () => {
    const { connection, eventsFile } = await orderDesk({ timeoutMs: 500 });
    const result = await createLoop({
      model: scriptedModel([toolCall('slow_report', {}), reply('It timed out.')]),
      tools: connection.tools,
    }).run({ goal: 'Build the report' });
    expect(result.stopReason).toBe('completed');
    expect(result.trace.find((event) => event.type === 'tool-end')).toMatchObject({ status: 'timeout' });
    // The server heard notifications/cancelled and aborted its handler.
    await vi.waitFor(() => expect(serverEvents(eventsFile)).toEqual(['started:slow_report', 'cancelled:slow_report']));
  });

  it('fails the call in flight and every later one when the server is killed, then stops with tool_unavailable', async () => {
    // A tool timeout far past the test's: the in-flight call must fail because the server is gone.
    const { connection, eventsFile } = await orderDesk({ timeoutMs: 600_000 });
    const loop = createLoop({
      model: scriptedModel([toolCall('hang', {}), toolCall('hang', {}), toolCall('hang', {}), reply('unreachable')]),
      tools: connection.tools,
      tasks: [{ id: 'main', prompt: 'Use the hang tool', requires: ['hang'] }],
    });
    const running = loop.run({ goal: 'Hang' });
    await vi.waitFor(() => expect(serverEvents(eventsFile)).toContain('started:hang'));
    process.kill(connection.pid!, 'SIGKILL');
    const result = await running;
    expect(result.stopReason).toBe('tool_unavailable');
    const answers = toolMessages(result.messages) as string[];
    expect(answers).toHaveLength(3);
    for (const answer of answers) expect(answer).toMatch(/closed the connection|was killed by SIGKILL/);
  });

  it('stops for a person when the server dies during a call that may have changed something (its outcome is unknown)', async () => {
    const { connection, eventsFile } = await orderDesk({ timeoutMs: 600_000 });
    expect(toolNamed(connection.tools, 'hang_write')).toMatchObject({ access: 'write', idempotent: false });
    const running = createLoop({
      model: scriptedModel([toolCall('hang_write', {}), reply('unreachable')]),
      tools: connection.tools,
    }).run({ goal: 'Change it' });
    await vi.waitFor(() => expect(serverEvents(eventsFile)).toContain('started:hang_write'));
    process.kill(connection.pid!, 'SIGKILL');
    const result = await running;
    expect(result.status).toBe('needs_human');
    expect(result.trace.find((event) => event.type === 'tool-end')).toMatchObject({ status: 'unknown_outcome' });
    expect(toolMessages(result.messages)).toEqual([
      expect.stringMatching(
        /^Tool hang_write was called, but the MCP server ".+" was killed by SIGKILL before it answered, so whether it took effect is unknown\./,
      ),
    ]);
  });

  it('summarises images and resources instead of passing their bytes', async () => {
    const { connection } = await orderDesk();
    const result = await createLoop({
      model: scriptedModel([toolCall('order_photo', {}), reply('A parcel.')]),
      tools: connection.tools,
    }).run({ goal: 'Show the parcel' });
    expect(toolMessages(result.messages)).toEqual([
      'parcel of O-101\n[image image/png, 12 KB]\n[resource file:///label.txt text/plain, 600 B]',
    ]);
  });

  it('redacts the secrets of env from the result, the trace, the trace file and onEvent', async () => {
    const secret = 'odt_live_4f9a8b7c6d5e';
    const { connection, eventsFile } = await orderDesk({}, { ORDER_DESK_TOKEN: secret });
    const live: TraceEvent[] = [];
    const file = join(eventsFile, '..', 'trace.jsonl');
    const result = await createLoop({
      // The model repeats the secret too, as if it had learnt it elsewhere.
      model: scriptedModel([toolCall('whoami', {}), reply(`The token is ${secret}.`)]),
      tools: connection.tools,
      trace: { file, onEvent: (event) => live.push(event) },
    }).run({ goal: 'Which token?' });
    expect(result.stopReason).toBe('completed');
    expect(toolMessages(result.messages)).toEqual(['running with token [redacted]']);
    expect(JSON.stringify(result.trace)).not.toContain(secret);
    expect(JSON.stringify(live)).not.toContain(secret);
    expect(readFileSync(file, 'utf8')).not.toContain(secret);
    expect(JSON.stringify(result.trace)).toContain('[redacted]');
  });

  it('filters with include and exclude, and names tools the server does not offer', async () => {
    const included = await orderDesk({ include: ['get_order', 'tag_order'] });
    expect(included.connection.tools.map((tool) => tool.name)).toEqual(['get_order', 'tag_order']);
    const excluded = await orderDesk({ exclude: ['hang', 'slow_report'] });
    expect(excluded.connection.tools.map((tool) => tool.name)).not.toContain('hang');
    expect(excluded.connection.tools.map((tool) => tool.name)).toContain('get_order');

    const eventsFile = eventsFileIn();
    const refused = connectMcp(orderDeskTarget(eventsFile), {
      include: ['get_ordr'],
      access: { refund: 'write' },
    });
    await expect(refused).rejects.toBeInstanceOf(LoopConfigError);
    await expect(refused).rejects.toThrow(
      /options\.access\.refund: no tool "refund" on the server; it offers: get_order/,
    );
    await expect(refused).rejects.toThrow(/options\.include\.0: no tool "get_ordr"/);
  });

  it('takes the tools of tools/list_changed for the next run of the same loop', async () => {
    const { connection, eventsFile } = await orderDesk();
    const loop = createLoop({
      model: scriptedModel([
        toolCall('unlock_returns', {}),
        reply('Enabled.'),
        toolCall('start_return', { order_id: 'O-5' }),
        reply('Return started.'),
      ]),
      tools: connection.tools,
    });
    expect((await loop.run({ goal: 'Enable returns' })).stopReason).toBe('completed');
    await vi.waitFor(() => expect(connection.tools.map((tool) => tool.name)).toContain('start_return'));
    const second = await loop.run({ goal: 'Start a return for O-5' });
    expect(second.stopReason).toBe('completed');
    expect(serverEvents(eventsFile)).toEqual(['called:unlock_returns', 'called:start_return:O-5']);
  });

  it('ends the server process on close(), after which its tools fail at once', async () => {
    const { connection, eventsFile } = await orderDesk();
    const pid = connection.pid!;
    expect(processState(pid)).toBe('running');
    await connection.close();
    await connection.close();
    await vi.waitFor(() => expect(processState(pid)).toBe('gone'));
    // Closed as the MCP specification says: its stdin ended first.
    expect(serverEvents(eventsFile)).toEqual(['stdin-closed']);
    const context = { signal: new AbortController().signal, idempotencyKey: 'k', runId: 'r', callId: 'c' };
    await expect(toolNamed(connection.tools, 'get_order').execute({ order_id: 'O-1' }, context)).rejects.toMatchObject({
      code: 'tool_call_failed',
      toolCode: 'mcp_connection_closed',
    });
  });

  it('refuses a target that is neither a command nor a URL, and a server that cannot start', async () => {
    await expect(connectMcp({} as never)).rejects.toThrow(/target: expected \{ command/);
    await expect(connectMcp({ url: 'ftp://example.com' })).rejects.toThrow(/target\.url: expected an http/);
    const secret = 'never-shown-0123456789';
    await expect(connectMcp({ command: 'loopstate-no-such-server', env: { TOKEN: secret } })).rejects.toMatchObject({
      code: 'mcp_connection_failed',
      message: expect.stringContaining('loopstate-no-such-server'),
    });
  });
});
