/** zod issues as config issues, with a "did you mean" hint for an unknown option. */
import { z } from 'zod';
import type { ConfigIssue } from '../../contracts/errors.js';

/** The option names allowed at `path`, for the "did you mean" hint on unknown keys. */
function knownKeysAt(root: z.core.$ZodType, path: readonly PropertyKey[]): string[] {
  let schema: z.core.$ZodType | undefined = root;
  for (const key of [...path, null]) {
    while (schema instanceof z.ZodOptional) schema = schema.unwrap();
    if (schema instanceof z.ZodUnion) schema = schema.options.find((option) => option instanceof z.ZodObject);
    if (key === null) break;
    if (schema instanceof z.ZodArray && typeof key === 'number') schema = schema.element;
    else if (schema instanceof z.ZodObject && typeof key === 'string') schema = schema.shape[key];
    else if (schema instanceof z.ZodRecord && typeof key === 'string') schema = schema.valueType;
    else return [];
  }
  return schema instanceof z.ZodObject ? Object.keys(schema.shape) : [];
}

/** Levenshtein distance, for typo hints only (short option names). */
function editDistance(a: string, b: string): number {
  let previous = Array.from({ length: b.length + 1 }, (_, index) => index);
  for (let i = 1; i <= a.length; i++) {
    const current = [i];
    for (let j = 1; j <= b.length; j++) {
      current[j] = Math.min(
        (previous[j] ?? 0) + 1,
        (current[j - 1] ?? 0) + 1,
        (previous[j - 1] ?? 0) + (a[i - 1] === b[j - 1] ? 0 : 1),
      );
    }
    previous = current;
  }
  return previous[b.length] ?? 0;
}

function unknownKeyMessage(key: string, known: readonly string[]): string {
  const closest = [...known].sort((left, right) => editDistance(key, left) - editDistance(key, right))[0];
  if (closest !== undefined && editDistance(key, closest) <= 2) return `unknown option; did you mean "${closest}"?`;
  return known.length > 0 ? `unknown option; expected one of: ${known.join(', ')}` : 'unknown option';
}

/**
 * A union's failure as the issues of its one option that got past the type check (e.g. `trace: false |
 * { file }` given `{ file: 42 }` names `trace.file`); null when no single option did.
 */
function unionBranchIssues(issue: z.core.$ZodIssueInvalidUnion): z.core.$ZodIssue[] | null {
  const nested = issue.errors.filter((branch) => branch.some((inner) => inner.path.length > 0));
  if (nested.length !== 1 || nested[0] === undefined) return null;
  return nested[0].map((inner) => ({ ...inner, path: [...issue.path, ...inner.path] }));
}

/** zod issues as config issues; unknown keys get a "did you mean" hint from the schema that was checked. */
export function toConfigIssues(
  error: z.ZodError | { issues: readonly z.core.$ZodIssue[] },
  root: z.core.$ZodType,
): ConfigIssue[] {
  return error.issues.flatMap((issue): ConfigIssue[] => {
    const branch = issue.code === 'invalid_union' ? unionBranchIssues(issue) : null;
    if (branch !== null) return toConfigIssues({ issues: branch }, root);
    return issue.code === 'unrecognized_keys'
      ? issue.keys.map((key) => ({
          path: z.core.toDotPath([...issue.path, key]),
          message: unknownKeyMessage(key, knownKeysAt(root, issue.path)),
        }))
      : [{ path: z.core.toDotPath(issue.path), message: issue.message }];
  });
}
