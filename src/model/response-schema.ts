/**
 * What a model adapter or an evaluator hands back is checked before it is counted: a string or
 * negative token count would silently break every budget comparison.
 */
import { z } from 'zod';

const tokenCount = z.number().int().min(0);

export const modelUsageSchema = z.object({ inputTokens: tokenCount, outputTokens: tokenCount });

export const modelResponseSchema = z.object({
  text: z.string().nullable(),
  toolCalls: z.array(z.object({ id: z.string(), name: z.string(), arguments: z.string() })),
  usage: modelUsageSchema,
});

/** `path: message; ...` for a failed check, or null when the value has the expected shape. */
export function shapeProblems(schema: z.ZodType, value: unknown): string | null {
  const checked = schema.safeParse(value);
  if (checked.success) return null;
  return checked.error.issues.map((issue) => `${z.core.toDotPath(issue.path) || '(root)'}: ${issue.message}`).join('; ');
}
