import type { McpServer } from '@modelcontextprotocol/sdk/server/mcp.js';

/** The order-desk MCP server of the `loopstate/mcp` tests (see mcp-server.mjs). */
export function buildMcpServer(events: { push(event: string): void }, options?: { secret?: string }): McpServer;
