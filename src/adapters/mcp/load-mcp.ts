/**
 * The `@modelcontextprotocol/sdk` package (an optional peer), loaded when the first `connectMcp` runs:
 * importing `loopstate/mcp` loads nothing, and a missing package is a `missing_dependency` error naming
 * the install. Loaded once; the client, its transports and the schemas of its notifications together.
 */
import type * as ClientModule from '@modelcontextprotocol/sdk/client/index.js';
import type * as SseModule from '@modelcontextprotocol/sdk/client/sse.js';
import type * as StdioModule from '@modelcontextprotocol/sdk/client/stdio.js';
import type * as StreamableHttpModule from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import type * as TypesModule from '@modelcontextprotocol/sdk/types.js';
import { loadPeerAsync } from '../../engine/peer-dependency.js';

export interface McpSdk {
  Client: typeof ClientModule.Client;
  StdioClientTransport: typeof StdioModule.StdioClientTransport;
  StreamableHTTPClientTransport: typeof StreamableHttpModule.StreamableHTTPClientTransport;
  StreamableHTTPError: typeof StreamableHttpModule.StreamableHTTPError;
  SSEClientTransport: typeof SseModule.SSEClientTransport;
  ToolListChangedNotificationSchema: typeof TypesModule.ToolListChangedNotificationSchema;
}

export const MCP_PEER = {
  packageName: '@modelcontextprotocol/sdk',
  installCommand: 'npm install @modelcontextprotocol/sdk',
  feature: 'connectMcp',
} as const;

/** The specifier of each module, in one place: a test points `load` elsewhere to see a missing package. */
const MODULES = {
  client: '@modelcontextprotocol/sdk/client/index.js',
  stdio: '@modelcontextprotocol/sdk/client/stdio.js',
  streamableHttp: '@modelcontextprotocol/sdk/client/streamableHttp.js',
  sse: '@modelcontextprotocol/sdk/client/sse.js',
  types: '@modelcontextprotocol/sdk/types.js',
} as const;

let loaded: Promise<McpSdk> | undefined;

const defaultImport = (specifier: string): Promise<unknown> => import(specifier);

async function importAll(importModule: (specifier: string) => Promise<unknown>): Promise<McpSdk> {
  const [client, stdio, streamableHttp, sse, types] = (await Promise.all([
    importModule(MODULES.client),
    importModule(MODULES.stdio),
    importModule(MODULES.streamableHttp),
    importModule(MODULES.sse),
    importModule(MODULES.types),
  ])) as [typeof ClientModule, typeof StdioModule, typeof StreamableHttpModule, typeof SseModule, typeof TypesModule];
  return {
    Client: client.Client,
    StdioClientTransport: stdio.StdioClientTransport,
    StreamableHTTPClientTransport: streamableHttp.StreamableHTTPClientTransport,
    StreamableHTTPError: streamableHttp.StreamableHTTPError,
    SSEClientTransport: sse.SSEClientTransport,
    ToolListChangedNotificationSchema: types.ToolListChangedNotificationSchema,
  };
}

/**
 * The SDK, imported on first use. `importModule` is for tests (a loader that fails as a missing package would).
 * @example
 * const { Client } = await loadMcpSdk();
 */
export function loadMcpSdk(importModule: (specifier: string) => Promise<unknown> = defaultImport): Promise<McpSdk> {
  if (importModule !== defaultImport) return loadPeerAsync(() => importAll(importModule), MCP_PEER);
  loaded ??= loadPeerAsync(() => importAll(importModule), MCP_PEER);
  // A failed load is not kept: the package may be installed before the next attempt.
  loaded.catch(() => (loaded = undefined));
  return loaded;
}
