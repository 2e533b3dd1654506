/**
 * The order-desk MCP server over HTTP on 127.0.0.1 (port 0), for the `loopstate/mcp` tests: one that
 * speaks Streamable HTTP with sessions and wants a bearer token, and an old one that speaks HTTP+SSE only.
 * Each records what it saw; `kill()` drops every connection at once, as a crashed server would.
 */
import { randomUUID } from 'node:crypto';
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo, Socket } from 'node:net';
import { Server as McpLowLevelServer } from '@modelcontextprotocol/sdk/server/index.js';
import { SSEServerTransport } from '@modelcontextprotocol/sdk/server/sse.js';
import { StreamableHTTPServerTransport } from '@modelcontextprotocol/sdk/server/streamableHttp.js';
import { CallToolRequestSchema, ListToolsRequestSchema, type Tool } from '@modelcontextprotocol/sdk/types.js';
import { buildMcpServer } from './mcp-server.mjs';

export interface TestMcpServer {
  url: string;
  events: string[];
  /** Authorization headers the server received, in order. */
  authorizations: string[];
  kill(): void;
  close(): Promise<void>;
}

async function listen(
  handler: (request: IncomingMessage, response: ServerResponse) => Promise<void>,
  path: string,
  events: string[],
  authorizations: string[],
): Promise<TestMcpServer> {
  const sockets = new Set<Socket>();
  const server: Server = createServer((request, response) => {
    authorizations.push(request.headers.authorization ?? '');
    handler(request, response).catch((error: unknown) => {
      if (!response.headersSent) response.writeHead(500).end(String(error));
    });
  });
  server.on('connection', (socket) => {
    sockets.add(socket);
    socket.on('close', () => sockets.delete(socket));
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;
  const kill = () => {
    server.close();
    for (const socket of sockets) socket.destroy();
  };
  return {
    url: `http://127.0.0.1:${port}${path}`,
    events,
    authorizations,
    kill,
    close: () =>
      new Promise<void>((resolve) => {
        kill();
        resolve();
      }),
  };
}

/** A Streamable HTTP server with sessions; requests without `Authorization: Bearer <token>` get a 401. */
export function startStreamableServer(token: string): Promise<TestMcpServer> {
  const events: string[] = [];
  const sessions = new Map<string, StreamableHTTPServerTransport>();
  return listen(
    async (request, response) => {
      if (request.headers.authorization !== `Bearer ${token}`) {
        response.writeHead(401, { 'content-type': 'application/json' }).end('{"error":"unauthorized"}');
        return;
      }
      const sessionId = request.headers['mcp-session-id'];
      let transport = typeof sessionId === 'string' ? sessions.get(sessionId) : undefined;
      if (transport === undefined) {
        const created: StreamableHTTPServerTransport = new StreamableHTTPServerTransport({
          sessionIdGenerator: () => randomUUID(),
          onsessioninitialized: (id) => void sessions.set(id, created),
          onsessionclosed: (id) => {
            events.push('session-closed');
            sessions.delete(id);
          },
        });
        transport = created;
        await buildMcpServer(events, { secret: token }).connect(transport);
      }
      await transport.handleRequest(request, response);
    },
    '/mcp',
    events,
    [],
  );
}

/** An old server: HTTP+SSE only (GET /sse for the stream, POST /messages); a POST to /sse is a 404. */
export function startSseOnlyServer(): Promise<TestMcpServer> {
  const events: string[] = [];
  const transports = new Map<string, SSEServerTransport>();
  return listen(
    async (request, response) => {
      const url = new URL(request.url ?? '/', 'http://127.0.0.1');
      if (request.method === 'GET' && url.pathname === '/sse') {
        const transport = new SSEServerTransport('/messages', response);
        transports.set(transport.sessionId, transport);
        events.push('sse-connected');
        await buildMcpServer(events).connect(transport);
        return;
      }
      const transport = transports.get(url.searchParams.get('sessionId') ?? '');
      if (request.method === 'POST' && url.pathname === '/messages' && transport !== undefined) {
        await transport.handlePostMessage(request, response);
        return;
      }
      response.writeHead(404).end('not found');
    },
    '/sse',
    events,
    [],
  );
}

/**
 * A low-level server (the SDK's `Server`, no zod) that lists the given tools with their raw JSON Schemas,
 * `pageSize` to a page (with `nextCursor`), and answers every call with its arguments as structured content.
 */
export function startRawToolsServer(tools: readonly Tool[], pageSize: number): Promise<TestMcpServer> {
  const events: string[] = [];
  const build = () => {
    const server = new McpLowLevelServer({ name: 'raw', version: '1.0.0' }, { capabilities: { tools: {} } });
    server.setRequestHandler(ListToolsRequestSchema, (request) => {
      const start = Number(request.params?.cursor ?? 0);
      events.push(`listed:${start}`);
      const next = start + pageSize;
      return { tools: tools.slice(start, next), ...(next < tools.length ? { nextCursor: String(next) } : {}) };
    });
    server.setRequestHandler(CallToolRequestSchema, (request) => {
      events.push(`called:${request.params.name}`);
      const args = request.params.arguments ?? {};
      return { content: [{ type: 'text', text: JSON.stringify(args) }], structuredContent: { received: args } };
    });
    return server;
  };
  return listen(
    async (request, response) => {
      // Stateless: a server and transport per request.
      const transport = new StreamableHTTPServerTransport({ sessionIdGenerator: undefined });
      await build().connect(transport);
      await transport.handleRequest(request, response);
    },
    '/mcp',
    events,
    [],
  );
}
