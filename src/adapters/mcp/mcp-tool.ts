/**
 * One MCP tool as a loopstate tool: arguments checked from its JSON Schema, access from its annotations
 * (or the caller's override), its calls sent with the tool's signal (so a cancel, deadline or timeout sends
 * `notifications/cancelled`), and a call whose connection is lost in flight failed at once: an idempotent
 * one as a tool error, any other as `unknown_outcome`, since the server may have acted before it went.
 */
import type { Client } from '@modelcontextprotocol/sdk/client/index.js';
import type { Tool as McpToolDescription } from '@modelcontextprotocol/sdk/types.js';
import { lostCallAnswer } from '../../engine/prompts.js';
import { thrownMessage } from '../../engine/redaction/describe-thrown.js';
import { defineTool, type Tool, type ToolAccess } from '../../engine/tools/define-tool.js';
import { ToolCallError } from '../../engine/tools/tool-call-error.js';
import { UnknownOutcomeError } from '../../engine/tools/unknown-outcome-error.js';
import { toolResultValue, type McpCallResult } from './call-result.js';
import { toInputSchema } from './input-schema.js';
import { scrubText } from './mcp-secrets.js';
import { accessFromAnnotations, isIdempotent } from './tool-access.js';

/** The SDK's own request timeout is left a little longer than the tool's, so the loop's timeout is the one that fires. */
const SDK_TIMEOUT_MARGIN_MS = 5_000;
/** JSON-RPC "invalid params": the server refused the arguments or does not know the tool, the caller's fault. */
const INVALID_PARAMS = -32602;

/** What the tools of one connection share. */
export interface McpToolContext {
  client: Client;
  timeoutMs: number;
  secrets: readonly string[];
  access: Readonly<Record<string, ToolAccess>> | undefined;
  /** Why the connection is gone (the server exited, `close()`), or null while it stands. */
  gone(): string | null;
  /** Calls waiting for their reply, each with the way to fail it when the connection is lost. */
  inFlight: Set<(reason: string) => void>;
  warn(message: string): void;
}

/**
 * The loopstate tool for one tool the server lists.
 * @example
 * const tools = listed.map((described) => mcpTool(described, context));
 */
export function mcpTool(described: McpToolDescription, context: McpToolContext): Tool {
  const { client, timeoutMs, secrets } = context;
  const access = context.access?.[described.name] ?? accessFromAnnotations(described.annotations);
  const schema = toInputSchema(described.inputSchema as Record<string, unknown>);
  if (schema.kind === 'unchecked')
    context.warn(`the arguments of the MCP tool ${described.name} are checked by the server only: ${schema.reason}`);
  const idempotent = isIdempotent(described.annotations, access);
  const tool = defineTool({
    name: described.name,
    description: described.description?.trim() || described.title?.trim() || `The MCP tool ${described.name}.`,
    input: schema.input,
    access,
    timeoutMs,
    idempotent,
    secrets,
    execute: async (args, { signal, idempotencyKey }) => {
      const goneBefore = context.gone();
      if (goneBefore !== null) throw new ToolCallError({ message: goneBefore, toolCode: 'mcp_connection_closed' });
      // The call's own signal, also aborted when the connection is lost (the SDK would wait for a reply that never comes).
      const call = new AbortController();
      const abortCall = () => call.abort(signal.reason);
      signal.addEventListener('abort', abortCall, { once: true });
      let lost: string | null = null;
      const drop = (reason: string) => {
        lost = reason;
        call.abort(new Error(reason));
      };
      context.inFlight.add(drop);
      let result: McpCallResult;
      try {
        result = (await client.callTool(
          { name: described.name, arguments: args as Record<string, unknown> },
          undefined,
          { signal: call.signal, timeout: timeoutMs + SDK_TIMEOUT_MARGIN_MS },
        )) as McpCallResult;
      } catch (error) {
        // The loop settled the call already (timeout, cancel); the SDK has told the server to stop.
        if (signal.aborted) throw error;
        // Lost in flight: a side effect the server may have made before it went is never reported as not made.
        if (lost !== null && !idempotent)
          throw new UnknownOutcomeError({
            tool: described.name,
            idempotencyKey,
            message: lostCallAnswer(described.name, lost),
          });
        throw callError(error, context.gone() ?? lost, secrets);
      } finally {
        context.inFlight.delete(drop);
        signal.removeEventListener('abort', abortCall);
      }
      return toolResultValue(result, described.name, secrets);
    },
  });
  // The model sees the server's own schema, not zod's rewrite of it (which adds patterns and bounds).
  const { $schema: _dialect, ...parameters } = described.inputSchema as Record<string, unknown>;
  return Object.freeze({ ...tool, spec: Object.freeze({ ...tool.spec, parameters }) });
}

/** A failed request as the model reads it: the server's message, its fault unless it refused the arguments. */
function callError(error: unknown, gone: string | null, secrets: readonly string[]): ToolCallError {
  if (gone !== null) return new ToolCallError({ message: gone, toolCode: 'mcp_connection_closed', cause: error });
  const code = (error as { code?: unknown } | null)?.code;
  return new ToolCallError({
    message: scrubText(thrownMessage(error), secrets),
    blame: code === INVALID_PARAMS ? 'caller' : 'tool',
    toolCode: code === INVALID_PARAMS ? 'mcp_invalid_params' : 'mcp_request_failed',
    cause: error,
  });
}
