/**
 * What an MCP tool result becomes for the model: `structuredContent` as JSON; otherwise the text parts
 * joined, with images, audio and resources summarised (`[image image/png, 12 KB]`), never their bytes.
 * A result with `isError: true` is thrown as a `ToolCallError` (`toolCode: 'mcp_tool_error'`): the model
 * reads the server's message and the tool's health counts the failure.
 */
import { ToolCallError } from '../../engine/tools/tool-call-error.js';
import { scrubJson, scrubText } from './mcp-secrets.js';

/** The parts of a content block this module reads; anything else is summarised by its type. */
interface ContentBlock {
  type: string;
  text?: unknown;
  data?: unknown;
  mimeType?: unknown;
  uri?: unknown;
  name?: unknown;
  resource?: { uri?: unknown; mimeType?: unknown; text?: unknown; blob?: unknown };
}

/** The parts of a `tools/call` result this module reads. */
export interface McpCallResult {
  content?: readonly ContentBlock[] | undefined;
  structuredContent?: unknown;
  isError?: boolean | undefined;
  /** An old server's result (protocol 2024-10-07). */
  toolResult?: unknown;
}

/** Bytes of base64 data, without decoding it. */
function base64Bytes(data: string): number {
  const padding = data.endsWith('==') ? 2 : data.endsWith('=') ? 1 : 0;
  return Math.max(0, Math.floor((data.length * 3) / 4) - padding);
}

/**
 * A size as people read it.
 * @example
 * formatSize(12_288) // '12 KB'
 */
export function formatSize(bytes: number): string {
  if (bytes < 1024) return `${bytes} B`;
  if (bytes < 1024 * 1024) return `${Math.round(bytes / 1024)} KB`;
  return `${(bytes / (1024 * 1024)).toFixed(1)} MB`;
}

const textOf = (value: unknown): string => (typeof value === 'string' ? value : '');

function sizeOf(block: { data?: unknown; text?: unknown; blob?: unknown }): string {
  if (typeof block.data === 'string') return formatSize(base64Bytes(block.data));
  if (typeof block.blob === 'string') return formatSize(base64Bytes(block.blob));
  if (typeof block.text === 'string') return formatSize(new TextEncoder().encode(block.text).length);
  return 'size unknown';
}

/**
 * One content block as the model reads it.
 * @example
 * describeBlock({ type: 'image', data: 'iVBORw0KGgo=', mimeType: 'image/png' }) // '[image image/png, 7 B]'
 */
export function describeBlock(block: ContentBlock): string {
  switch (block.type) {
    case 'text':
      return textOf(block.text);
    case 'image':
    case 'audio':
      return `[${block.type} ${textOf(block.mimeType) || 'unknown type'}, ${sizeOf(block)}]`;
    case 'resource_link':
      return `[resource link ${textOf(block.uri)}${block.name ? ` (${textOf(block.name)})` : ''}${block.mimeType ? `, ${textOf(block.mimeType)}` : ''}]`;
    case 'resource': {
      const resource = block.resource ?? {};
      return `[resource ${textOf(resource.uri)}${resource.mimeType ? ` ${textOf(resource.mimeType)}` : ''}, ${sizeOf(resource)}]`;
    }
    default:
      return `[${String(block.type)} content]`;
  }
}

/**
 * The value the loop hands the model for a result, or a thrown `ToolCallError` for `isError: true`;
 * every string scrubbed of the connection's secrets.
 * @example
 * toolResultValue({ content: [{ type: 'text', text: 'shipped' }] }, 'get_order', []) // 'shipped'
 */
export function toolResultValue(result: McpCallResult, toolName: string, secrets: readonly string[]): unknown {
  const text = (result.content ?? []).map(describeBlock).join('\n');
  if (result.isError === true) {
    throw new ToolCallError({
      message: scrubText(text.trim() || `the MCP tool ${toolName} reported an error without a message`, secrets),
      toolCode: 'mcp_tool_error',
    });
  }
  if (result.structuredContent !== undefined && result.structuredContent !== null)
    return scrubJson(result.structuredContent, secrets);
  if (result.content === undefined && result.toolResult !== undefined) return scrubJson(result.toolResult, secrets);
  return scrubText(text, secrets);
}
