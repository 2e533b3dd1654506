/**
 * What a model adapter or an evaluator hands back is checked before it is counted: a string or
 * negative token count would silently break every budget comparison.
 */
import { z } from 'zod';
import type { ModelResponseMetadata } from './model.js';

const tokenCount = z.number().int().min(0);

export const modelUsageSchema = z.object({
  inputTokens: tokenCount,
  outputTokens: tokenCount,
  cachedInputTokens: tokenCount.optional(),
  reasoningTokens: tokenCount.optional(),
});

export const modelResponseSchema = z.object({
  text: z.string().nullable(),
  toolCalls: z.array(z.object({ id: z.string(), name: z.string(), arguments: z.string() })),
  usage: modelUsageSchema,
  // Not checked: metadata is for traces and warnings, never control flow, so a custom adapter's odd metadata is
  // cleaned (`knownMetadata`: wrong types dropped, an unknown finish reason kept as `other` + raw), never fatal.
  metadata: z.custom<ModelResponseMetadata>().optional(),
});

/** `path: message; ...` for a failed check, or null when the value has the expected shape. */
export function shapeProblems(schema: z.ZodType, value: unknown): string | null {
  const checked = schema.safeParse(value);
  if (checked.success) return null;
  return checked.error.issues
    .map((issue) => `${z.core.toDotPath(issue.path) || '(root)'}: ${issue.message}`)
    .join('; ');
}

const isTokenCount = (value: unknown): boolean =>
  typeof value === 'number' && Number.isSafeInteger(value) && value >= 0;

/**
 * The same check as `modelResponseSchema`, written out for the hot path: a well-formed response (the
 * usual case, every step) costs a few property reads; zod runs only to name what is wrong.
 * @example
 * if (!isWellFormedResponse(response)) throw new Error(shapeProblems(modelResponseSchema, response) ?? '');
 */
export function isWellFormedResponse(value: unknown): boolean {
  if (typeof value !== 'object' || value === null) return false;
  const { text, toolCalls, usage } = value as { text?: unknown; toolCalls?: unknown; usage?: unknown };
  if (text !== null && typeof text !== 'string') return false;
  if (typeof usage !== 'object' || usage === null) return false;
  const { inputTokens, outputTokens, cachedInputTokens, reasoningTokens } = usage as Record<string, unknown>;
  if (!isTokenCount(inputTokens) || !isTokenCount(outputTokens)) return false;
  if (
    (cachedInputTokens !== undefined && !isTokenCount(cachedInputTokens)) ||
    (reasoningTokens !== undefined && !isTokenCount(reasoningTokens))
  )
    return false;
  if (!Array.isArray(toolCalls)) return false;
  for (const call of toolCalls as unknown[]) {
    if (typeof call !== 'object' || call === null) return false;
    const { id, name, arguments: args } = call as { id?: unknown; name?: unknown; arguments?: unknown };
    if (typeof id !== 'string' || typeof name !== 'string' || typeof args !== 'string') return false;
  }
  return true;
}
