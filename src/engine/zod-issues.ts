/**
 * How loopstate writes zod issues for a reader (a model repairing its tool arguments or output, a
 * person reading an error): one `path: message` line per issue, the path in zod's dot form with
 * bracketed indices (`items[0].sku`). Callers join the lines their own way.
 */
import { z } from 'zod';

/**
 * Where an issue is: zod's dot path (`items[0].sku`), or `(root)` for the value itself.
 * @example
 * zodIssuePath(['items', 0, 'sku']) // 'items[0].sku'
 */
export function zodIssuePath(path: readonly PropertyKey[]): string {
  return z.core.toDotPath(path) || '(root)';
}

/**
 * One `path: message` line per zod issue, in zod's order.
 * @example
 * const schema = z.object({ items: z.array(z.object({ sku: z.string() })) });
 * describeZodIssues(z.safeParse(schema, { items: [{ sku: 7 }] }).error?.issues ?? [])
 * // ['items[0].sku: Invalid input: expected string, received number']
 */
export function describeZodIssues(issues: readonly z.core.$ZodIssue[]): string[] {
  return issues.map((issue) => `${zodIssuePath(issue.path)}: ${issue.message}`);
}
