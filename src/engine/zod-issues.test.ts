import { z } from 'zod';
import { describe, expect, it } from 'vitest';
import { describeZodIssues, zodIssuePath } from './zod-issues.js';

const issuesOf = (schema: z.ZodType, value: unknown) => z.safeParse(schema, value).error?.issues ?? [];

describe('zodIssuePath', () => {
  it.each([
    [['items', 0, 'sku'], 'items[0].sku'],
    [['tools', 1, 'name'], 'tools[1].name'],
    [['limits', 'maxSteps'], 'limits.maxSteps'],
    [['headers', 'content-type'], 'headers["content-type"]'],
    [[], '(root)'],
  ] as const)('writes %j as %s', (path, expected) => {
    expect(zodIssuePath(path)).toBe(expected);
  });
});

describe('describeZodIssues', () => {
  it('writes one path: message line per issue, in order, with bracketed indices', () => {
    const schema = z.object({ order_id: z.string(), lines: z.array(z.object({ sku: z.string() })) });
    expect(describeZodIssues(issuesOf(schema, { order_id: 7, lines: [{ sku: 'A' }, { sku: 9 }] }))).toEqual([
      'order_id: Invalid input: expected string, received number',
      'lines[1].sku: Invalid input: expected string, received number',
    ]);
  });

  it('names the root when the value itself is wrong', () => {
    expect(describeZodIssues(issuesOf(z.object({}), [1, 2]))).toEqual([
      '(root): Invalid input: expected object, received array',
    ]);
  });

  it('returns no lines for no issues', () => {
    expect(describeZodIssues([])).toEqual([]);
  });
});
