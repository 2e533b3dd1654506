/**
 * `connectMcp(target, options?)`: the tools of an MCP server as ordinary loopstate tools. Each tool's
 * arguments are validated from its JSON Schema, its access comes from its annotations (fail-closed), a
 * call's signal cancels the request on the server (`notifications/cancelled`), a server that is gone
 * fails its calls at once, and `tools/list_changed` updates `connection.tools` in place for the next run.
 */
import type { Client } from '@modelcontextprotocol/sdk/client/index.js';
import type { Tool as McpToolDescription } from '@modelcontextprotocol/sdk/types.js';
import { LoopConfigError, LoopstateError } from '../../contracts/errors.js';
import { DEFAULT_TOOL_TIMEOUT_MS } from '../../engine/constants.js';
import { thrownMessage } from '../../engine/redaction/describe-thrown.js';
import type { Tool } from '../../engine/tools/define-tool.js';
import { idleStreamFetch } from './idle-stream-fetch.js';
import { loadMcpSdk, type McpSdk } from './load-mcp.js';
import { mcpTool, type McpToolContext } from './mcp-tool.js';
import { scrubText, targetSecrets } from './mcp-secrets.js';
import {
  parseOptions,
  parseTarget,
  unknownToolIssues,
  type McpConnectOptions,
  type McpTarget,
  type ParsedOptions,
  type ParsedTarget,
} from './mcp-target.js';
import { childOf, describeExit, holdServerProcess, type ServerExit } from './server-process.js';
import { LOOPSTATE_VERSION } from '../../contracts/version.js';

/**
 * An open connection to an MCP server.
 * @example
 * const connection = await connectMcp({ command: 'node', args: ['server.js'] });
 * const loop = createLoop({ model, tools: connection.tools });
 * await connection.close();
 */
export interface McpConnection {
  /**
   * The server's tools, as loopstate tools. Updated in place when the server says its list changed:
   * pass this array itself to `createLoop` and each new run takes the current list (a copy keeps the old one).
   */
  readonly tools: readonly Tool[];
  /** How the connection is made: `stdio`, `streamable-http` or `sse` (an older server). */
  readonly transport: 'stdio' | 'streamable-http' | 'sse';
  /** The server's process id (stdio), else null. */
  readonly pid: number | null;
  /** What the connection could not do as asked (a schema it could not check, a failed refresh), secrets removed. */
  readonly warnings: readonly string[];
  /** Lists the server's tools again and updates `tools` in place; `tools/list_changed` does this by itself. */
  refresh(): Promise<readonly Tool[]>;
  /** Ends the server's process (stdio) or session (HTTP); the tools fail from then on. Safe to call twice. */
  close(): Promise<void>;
}

/** Tool names the loop accepts (and most providers). */
const TOOL_NAME = /^[a-zA-Z0-9_-]{1,64}$/;

interface Session {
  client: Client;
  transport: 'stdio' | 'streamable-http' | 'sse';
  pid: number | null;
  close(): Promise<void>;
}

function connectionError(message: string, secrets: readonly string[], cause: unknown): LoopstateError {
  return new LoopstateError({ code: 'mcp_connection_failed', message: scrubText(message, secrets), cause });
}

function targetName(target: ParsedTarget): string {
  return target.kind === 'stdio' ? [target.command, ...target.args].join(' ') : target.url.href;
}

async function openStdio(
  sdk: McpSdk,
  target: Extract<ParsedTarget, { kind: 'stdio' }>,
  client: Client,
  onExit: (exit: ServerExit) => void,
): Promise<Session> {
  const transport = new sdk.StdioClientTransport({
    command: target.command,
    args: target.args,
    env: target.env,
    ...(target.cwd === undefined ? {} : { cwd: target.cwd }),
  });
  await client.connect(transport);
  const child = childOf(transport);
  const release = child === undefined ? () => {} : holdServerProcess(child, () => client.close(), onExit);
  return {
    client,
    transport: 'stdio',
    pid: transport.pid,
    close: async () => {
      release();
      await client.close();
    },
  };
}

async function openHttp(
  sdk: McpSdk,
  target: Extract<ParsedTarget, { kind: 'http' }>,
  makeClient: () => Client,
): Promise<Session> {
  const requestInit = { headers: target.headers };
  const fetch = idleStreamFetch();
  const client = makeClient();
  const streamable = new sdk.StreamableHTTPClientTransport(target.url, { requestInit, fetch });
  try {
    await client.connect(streamable);
    return {
      client,
      transport: 'streamable-http',
      pid: null,
      close: async () => {
        // Ends the session on the server too (a server without sessions answers 405, which is fine).
        await streamable.terminateSession().catch(() => {});
        await client.close();
      },
    };
  } catch (error) {
    // An older server refuses the POST with a 4xx: it speaks HTTP+SSE, as the MCP specification says to try next.
    const status = error instanceof sdk.StreamableHTTPError ? error.code : undefined;
    if (status === undefined || status < 400 || status >= 500) throw error;
    await client.close().catch(() => {});
  }
  const sseClient = makeClient();
  await sseClient.connect(new sdk.SSEClientTransport(target.url, { requestInit, fetch, eventSourceInit: { fetch } }));
  return { client: sseClient, transport: 'sse', pid: null, close: () => sseClient.close() };
}

async function listAllTools(client: Client): Promise<McpToolDescription[]> {
  const tools: McpToolDescription[] = [];
  let cursor: string | undefined;
  // A server that hands back the same cursor forever would loop forever; a thousand pages is far past any real list.
  for (let page = 0; page < 1000; page++) {
    const listed = await client.listTools(cursor === undefined ? {} : { cursor });
    tools.push(...listed.tools);
    cursor = listed.nextCursor;
    if (cursor === undefined) return tools;
  }
  throw new Error('tools/list returned more than 1000 pages');
}

function chosen(described: readonly McpToolDescription[], options: ParsedOptions): McpToolDescription[] {
  return described.filter(
    (tool) =>
      (options.include === undefined || options.include.includes(tool.name)) &&
      !(options.exclude ?? []).includes(tool.name),
  );
}

/**
 * Connects to an MCP server and returns its tools as loopstate tools. Access comes from each tool's
 * annotations, fail-closed: `readOnlyHint: true` is `read`, `destructiveHint: false` is `write`, anything
 * else `destructive` (approval needed); `idempotentHint: true` makes a call safe to re-run. Annotations
 * are the server's word: a server you do not trust gets `access` set by you. Throws `LoopConfigError`
 * for a bad target or option (a tool name the server does not offer included), `mcp_connection_failed`
 * when the server cannot be reached, and `missing_dependency` without `@modelcontextprotocol/sdk`.
 * @example
 * const github = await connectMcp(
 *   { command: 'npx', args: ['-y', '@modelcontextprotocol/server-github'], env: { GITHUB_TOKEN: token } },
 *   { access: { create_issue: 'write' } },
 * );
 * const loop = createLoop({ model, tools: github.tools });
 * try {
 *   await loop.run({ goal: 'File an issue for the failing build' });
 * } finally {
 *   await github.close();
 * }
 */
export async function connectMcp(target: McpTarget, options: McpConnectOptions = {}): Promise<McpConnection> {
  const parsedTarget = parseTarget(target);
  const parsedOptions = parseOptions(options);
  const sdk = await loadMcpSdk();
  const secrets =
    parsedTarget.kind === 'stdio' ? targetSecrets(parsedTarget.env) : targetSecrets({}, parsedTarget.headers);
  const name = targetName(parsedTarget);
  const timeoutMs = parsedOptions.timeoutMs ?? DEFAULT_TOOL_TIMEOUT_MS;
  const tools: Tool[] = [];
  const warnings: string[] = [];
  const warn = (message: string) => warnings.push(scrubText(message, secrets));
  let gone: string | null = null;
  let closed = false;
  /** Calls waiting for their reply, each with the way to fail it when its stream drops. */
  const inFlight = new Set<(reason: string) => void>();

  const makeClient = () => {
    const client = new sdk.Client({ name: 'loopstate', version: LOOPSTATE_VERSION });
    client.onerror = (error) => {
      // Streamable HTTP: a reply stream cut off (the server died) is only reported here, and its request
      // would wait for its timeout; the SDK names the failure so, and every call in flight is failed now.
      // Other transport errors (a broken pipe) surface as the request's failure or the close.
      if (/SSE stream disconnected/.test(error.message)) {
        const reason = `the connection to the MCP server "${name}" dropped`;
        for (const drop of [...inFlight]) drop(reason);
      }
    };
    return client;
  };
  let session: Session;
  try {
    session =
      parsedTarget.kind === 'stdio'
        ? await openStdio(sdk, parsedTarget, makeClient(), (exit) => {
            gone ??= `the MCP server "${name}" ${describeExit(exit)}`;
          })
        : await openHttp(sdk, parsedTarget, makeClient);
  } catch (error) {
    throw connectionError(`could not connect to the MCP server "${name}": ${thrownMessage(error)}`, secrets, error);
  }
  const { client } = session;
  client.onclose = () => {
    gone ??= closed ? 'the MCP connection was closed' : `the MCP server "${name}" closed the connection`;
    for (const drop of [...inFlight]) drop(gone);
  };

  const toolContext: McpToolContext = {
    client,
    timeoutMs,
    secrets,
    access: parsedOptions.access,
    gone: () => gone,
    inFlight,
    warn,
  };

  const build = (described: readonly McpToolDescription[]): Tool[] => {
    const kept = chosen(described, parsedOptions);
    for (const tool of kept.filter((candidate) => !TOOL_NAME.test(candidate.name)))
      warn(
        `the MCP tool ${JSON.stringify(tool.name)} is left out: providers accept 1-64 of letters, digits, "_" or "-" as a tool name`,
      );
    return kept.filter((tool) => TOOL_NAME.test(tool.name)).map((described) => mcpTool(described, toolContext));
  };

  let refreshing: Promise<readonly Tool[]> = Promise.resolve(tools);
  const refresh = (): Promise<readonly Tool[]> => {
    refreshing = refreshing.then(async () => {
      const next = build(await listAllTools(client));
      tools.splice(0, tools.length, ...next);
      return tools;
    });
    return refreshing;
  };

  try {
    const described = await listAllTools(client);
    const issues = unknownToolIssues(
      parsedOptions,
      described.map((tool) => tool.name),
    );
    if (issues.length > 0) throw new LoopConfigError({ issues });
    tools.push(...build(described));
  } catch (error) {
    await session.close().catch(() => {});
    if (error instanceof LoopConfigError) throw error;
    throw connectionError(
      `could not list the tools of the MCP server "${name}": ${thrownMessage(error)}`,
      secrets,
      error,
    );
  }
  client.setNotificationHandler(sdk.ToolListChangedNotificationSchema, () => {
    refresh().catch((error: unknown) => {
      warn(`could not list the tools of the MCP server "${name}" again: ${thrownMessage(error)}`);
    });
  });

  return {
    tools,
    transport: session.transport,
    pid: session.pid,
    warnings,
    refresh,
    close: async () => {
      if (closed) return;
      closed = true;
      gone ??= 'the MCP connection was closed';
      await session.close();
    },
  };
}
