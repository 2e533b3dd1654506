/**
 * How much an MCP tool may change the world, from its annotations, fail-closed: `readOnlyHint: true` is
 * `read`, `destructiveHint: false` is `write`, anything else (no annotations at all included) is
 * `destructive`, as the MCP specification presumes, so it needs approval. The annotations are the
 * server's word; `access` in the options overrides it per tool.
 */
import type { ToolAccess } from '../../engine/tools/define-tool.js';

/** The annotations this module reads (MCP `ToolAnnotations`). */
export interface McpToolAnnotations {
  readOnlyHint?: boolean | undefined;
  destructiveHint?: boolean | undefined;
  idempotentHint?: boolean | undefined;
}

/**
 * The access level an MCP tool's annotations give it.
 * @example
 * accessFromAnnotations({ readOnlyHint: true }) // 'read'
 * accessFromAnnotations(undefined) // 'destructive'
 */
export function accessFromAnnotations(annotations: McpToolAnnotations | undefined): ToolAccess {
  if (annotations?.readOnlyHint === true) return 'read';
  if (annotations?.destructiveHint === false) return 'write';
  return 'destructive';
}

/**
 * Whether re-running a call is harmless: said by `idempotentHint: true`, and true of a read.
 * @example
 * isIdempotent({ idempotentHint: true }, 'write') // true
 */
export function isIdempotent(annotations: McpToolAnnotations | undefined, access: ToolAccess): boolean {
  return access === 'read' || annotations?.idempotentHint === true;
}
