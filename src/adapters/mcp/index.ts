/**
 * `loopstate/mcp`: the tools of any MCP server as loopstate tools, through the official
 * `@modelcontextprotocol/sdk` (an optional peer: `npm install @modelcontextprotocol/sdk`), over stdio,
 * Streamable HTTP or (for an older server) HTTP+SSE.
 */
export { connectMcp, type McpConnection } from './connect-mcp.js';
export type { McpConnectOptions, McpHttpTarget, McpStdioTarget, McpTarget } from './mcp-target.js';
