/**
 * Keeps docs/reference/config.md true: every option of createLoop's config schema and of run()'s input has a
 * row, no row names an option that does not exist, and every default written as a literal equals the code's:
 * the constants (`DEFAULT_LIMITS`, `DEFAULT_NO_PROGRESS`, `DEFAULT_CONTEXT`, `DEFAULT_DURABLE`, the backoff,
 * `OPENAI_DEFAULTS`, `DEFAULT_DBOS_WORKER`, …) and what `resolveConfig` makes of a config that leaves the
 * option out. Any other page's table with an `option` and a `default` column is held to the same values.
 */
import { isDeepStrictEqual } from 'node:util';
import { z } from 'zod';
import { describe, expect, it } from 'vitest';
import {
  createLoop,
  defineTool,
  DEFAULT_CONTEXT,
  DEFAULT_DURABLE,
  DEFAULT_LEARNING,
  DEFAULT_LIMITS,
  DEFAULT_NO_PROGRESS,
  evaluators,
  ToolHealth,
} from 'loopstate';
import { resolveConfig, resolveLimits } from 'loopstate/internal';
import { OPENAI_DEFAULTS } from 'loopstate/openai';
import { AI_SDK_DEFAULTS } from 'loopstate/ai-sdk';
import { DEFAULT_DBOS_WORKER } from 'loopstate/dbos';
import { reply, scriptedModel, toolCall, virtualClock } from 'loopstate/testing';
import { configSchema, runInputSchema } from '../../src/engine/config/config-schema.js';
import { DEFAULT_BACKOFF, DEFAULT_TOOL_TIMEOUT_MS } from '../../src/engine/constants.js';
import { DEFAULT_TOOL_POLICY } from '../../src/engine/tools/policy.js';
import { codeSpan, docFiles, extractTables, readDoc, type TableRow } from './markdown.js';

const PAGE = 'docs/reference/config.md';
const rows = extractTables(readDoc(PAGE)).filter(
  (row) => row.cells.option !== undefined && row.cells.default !== undefined,
);
const optionOf = (row: TableRow) => codeSpan(row.cells.option ?? '') ?? `(not one code span: ${row.cells.option})`;
const rowsUnder = (section: string) => rows.filter((row) => row.section === section);

/**
 * A default cell as a value when it is a literal (a number, string, boolean, null, Infinity or an array of
 * them, in one code span), else undefined: prose and names such as `maxSteps` or `systemClock` are not values.
 */
export function literalOf(cell: string): { value: unknown } | undefined {
  const text = codeSpan(cell);
  if (text === null) return undefined;
  if (text === 'Infinity') return { value: Infinity };
  if (!/^(?:-?[\d_.]+|'[^']*'|true|false|null|\[(?:\s*'[^']*'\s*,?)*\])$/.test(text)) return undefined;
  return { value: JSON.parse(text.replace(/(?<=\d)_(?=\d)/g, '').replaceAll("'", '"')) as unknown };
}

/** Every option path of a zod object: leaves and nested objects (`limits`, `limits.maxSteps`, `tasks[].id`). */
function optionPaths(schema: z.ZodType, prefix = ''): string[] {
  let inner: z.ZodType = schema;
  // Unwrap optional and union-with-false (trace, otel) down to the object or array under them.
  for (;;) {
    if (inner instanceof z.ZodOptional) inner = inner.unwrap() as z.ZodType;
    else if (inner instanceof z.ZodUnion)
      inner = (inner.options as z.ZodType[]).find((option) => !(option instanceof z.ZodLiteral)) ?? inner;
    else break;
    if (!(inner instanceof z.ZodOptional) && !(inner instanceof z.ZodUnion)) break;
  }
  if (inner instanceof z.ZodArray && inner.element instanceof z.ZodObject)
    return optionPaths(inner.element as z.ZodType, `${prefix}[]`);
  if (!(inner instanceof z.ZodObject)) return [];
  return Object.entries(inner.shape as Record<string, z.ZodType>).flatMap(([key, value]) => {
    const path = prefix === '' ? key : `${prefix}.${key}`;
    return [path, ...optionPaths(value, path)];
  });
}

/** The code's default for a createLoop option, where the code holds one as a value. */
function codeDefault(path: string): { value: unknown } | undefined {
  const [group, key, ...deeper] = path.split('.');
  const constants: Record<string, Readonly<Record<string, unknown>>> = {
    limits: DEFAULT_LIMITS,
    noProgress: DEFAULT_NO_PROGRESS,
    context: DEFAULT_CONTEXT,
    durable: DEFAULT_DURABLE,
    retry: DEFAULT_BACKOFF,
    policy: DEFAULT_TOOL_POLICY,
  };
  // Learning is off unless given: its defaults are the constants, at any depth.
  if (group === 'learning' && key !== undefined) {
    let value: unknown = DEFAULT_LEARNING;
    for (const segment of [key, ...deeper]) value = (value as Record<string, unknown> | undefined)?.[segment];
    return value === undefined || typeof value === 'object' ? undefined : { value };
  }
  const fromConstants = group !== undefined && key !== undefined && deeper.length === 0 ? constants[group] : undefined;
  if (fromConstants && key !== undefined && key in fromConstants) return { value: fromConstants[key] };
  // What resolveConfig makes of a config that leaves the option out; `retry` resolves to `backoff`.
  let holder: unknown = resolveConfig({ model: scriptedModel([]) });
  for (const segment of [group === 'retry' ? 'backoff' : group, key, ...deeper].filter((part) => part !== undefined)) {
    if (typeof holder !== 'object' || holder === null || !(segment in holder)) return undefined;
    holder = (holder as Record<string, unknown>)[segment];
  }
  // A Map of tools is the resolved form of the `tools` list.
  return { value: holder instanceof Map ? [...holder.values()] : holder };
}

describe('docs/reference/config.md', () => {
  it('reads the tables of the page', () => {
    expect(rowsUnder('createLoop').length).toBeGreaterThan(60);
    expect(literalOf('`120_000`')).toEqual({ value: 120_000 });
    expect(literalOf("`['read', 'write']`")).toEqual({ value: ['read', 'write'] });
    expect(literalOf('`maxSteps`')).toBeUndefined();
    expect(literalOf("the model's `contextWindowTokens`, else `Infinity`")).toBeUndefined();
  });

  it("documents every option of createLoop's config, and none that does not exist", () => {
    const documented = rowsUnder('createLoop').map(optionOf);
    const options = optionPaths(configSchema);
    const isLeafOrGroup = new Set(options);
    // Groups (limits, trace, …) may have a row of their own; every leaf must.
    const leaves = options.filter(
      (path) => !options.some((other) => other.startsWith(`${path}.`) || other.startsWith(`${path}[]`)),
    );
    expect(leaves.filter((path) => !documented.includes(path))).toEqual([]);
    expect(documented.filter((path) => !isLeafOrGroup.has(path))).toEqual([]);
    expect(documented.filter((path, index) => documented.indexOf(path) !== index)).toEqual([]);
  });

  it("documents every option of run()'s input", () => {
    expect(rowsUnder('run').map(optionOf).sort()).toEqual(optionPaths(runInputSchema).sort());
  });

  it('writes every default the code holds as a value, and each literal default equals it', () => {
    const mismatches: string[] = [];
    for (const row of rowsUnder('createLoop')) {
      const path = optionOf(row);
      const code = codeDefault(path);
      const written = literalOf(row.cells.default ?? '');
      const inConstants =
        /^(limits|noProgress|context|durable|retry|policy)\./.test(path) && code !== undefined && !SCALED.has(path);
      if (inConstants && written === undefined)
        mismatches.push(
          `${PAGE}:${row.line} ${path}: the code's default is ${String(code?.value)}; write it as a literal`,
        );
      if (written !== undefined && code === undefined && !BEHAVIOUR_CHECKED.has(path))
        mismatches.push(`${PAGE}:${row.line} ${path}: no default in the code to check ${row.cells.default} against`);
      if (written !== undefined && code !== undefined && !isDeepStrictEqual(written.value, code.value)) {
        mismatches.push(
          `${PAGE}:${row.line} ${path}: the page says ${row.cells.default}, the code ${JSON.stringify(code.value)}`,
        );
      }
    }
    expect(mismatches).toEqual([]);
  });

  it('gives every key of DEFAULT_LIMITS, DEFAULT_NO_PROGRESS, DEFAULT_CONTEXT, DEFAULT_DURABLE and the backoff a row', () => {
    const documented = new Set(rowsUnder('createLoop').map(optionOf));
    const groups = {
      limits: DEFAULT_LIMITS,
      noProgress: DEFAULT_NO_PROGRESS,
      context: DEFAULT_CONTEXT,
      durable: DEFAULT_DURABLE,
      retry: DEFAULT_BACKOFF,
    };
    const missing = Object.entries(groups)
      .flatMap(([group, defaults]) => Object.keys(defaults).map((key) => `${group}.${key}`))
      .filter((path) => !documented.has(path));
    expect(missing).toEqual([]);
  });

  it('says the two limits that scale with others as the code computes them', () => {
    const cells = Object.fromEntries(rowsUnder('createLoop').map((row) => [optionOf(row), row.cells.default]));
    expect(cells['limits.maxStepsPerTask']).toBe('`maxSteps`');
    expect(cells['limits.maxToolCalls']).toBe('`maxSteps` × `maxToolCallsPerReply`');
    expect(resolveLimits({ maxSteps: 7, maxToolCallsPerReply: 3 })).toMatchObject({
      maxStepsPerTask: 7,
      maxToolCalls: 21,
    });
    expect(cells['context.maxInputTokensPerCall']).toBe("the model's `contextWindowTokens`, else `Infinity`");
    expect(
      resolveConfig({ model: { ...scriptedModel([]), id: 'windowed', contextWindowTokens: 8_000 } }).context
        .maxInputTokensPerCall,
    ).toBe(8_000);
    expect(resolveConfig({ model: scriptedModel([]) }).context.maxInputTokensPerCall).toBe(
      DEFAULT_CONTEXT.maxInputTokensPerCall,
    );
  });

  it.each([
    ['openaiModel', OPENAI_DEFAULTS],
    ['aiSdkModel', AI_SDK_DEFAULTS],
    ['dbosWorker', DEFAULT_DBOS_WORKER],
    ['defineTool', { timeoutMs: DEFAULT_TOOL_TIMEOUT_MS }],
    ['ToolHealth', { threshold: new ToolHealth().threshold, cooldownMs: new ToolHealth().cooldownMs }],
  ] as const)('lists every default of %s with its value', (section, defaults) => {
    const cells = Object.fromEntries(
      rowsUnder(section).map((row) => [optionOf(row), literalOf(row.cells.default ?? '')?.value]),
    );
    expect(Object.fromEntries(Object.keys(defaults).map((key) => [key, cells[key]]))).toEqual({ ...defaults });
  });

  it('holds the option tables of the other pages to the same defaults', () => {
    const mismatches = docFiles()
      .filter((file) => file !== PAGE)
      .flatMap((file) =>
        extractTables(readDoc(file))
          .filter((row) => row.cells.option !== undefined && row.cells.default !== undefined)
          .flatMap((row) => {
            const path = optionOf(row);
            const [code, written] = [codeDefault(path), literalOf(row.cells.default ?? '')];
            if (code === undefined || written === undefined || isDeepStrictEqual(written.value, code.value)) return [];
            return [`${file}:${row.line} ${path}: ${row.cells.default}, the code ${String(code.value)}`];
          }),
      );
    expect(mismatches).toEqual([]);
    expect(
      docFiles().filter(
        (file) =>
          file !== PAGE &&
          extractTables(readDoc(file)).some((row) => row.cells.option !== undefined && row.cells.default !== undefined),
      ),
    ).toEqual(expect.arrayContaining(['docs/concepts/budgets.md', 'docs/concepts/no-progress.md']));
  });
});

/** Defaults that follow other options or the model, written as such and checked in their own test. */
const SCALED = new Set(['limits.maxStepsPerTask', 'limits.maxToolCalls', 'context.maxInputTokensPerCall']);

/** Defaults no value in the code holds, checked by what a run does when the option is left out. */
const BEHAVIOUR_CHECKED = new Set(['policy.onDeny', 'tasks[].onFailure']);

describe('defaults checked by behaviour', () => {
  const write = defineTool({
    name: 'write_note',
    description: 'Write a note.',
    input: z.object({}),
    access: 'write',
    execute: () => 'ok',
  });

  it("policy.onDeny 'stop': a denied call ends the run with permission_denied", async () => {
    const loop = createLoop({
      model: scriptedModel([toolCall('write_note', {}), reply('unused')]),
      tools: [write],
      policy: { allow: ['read'] },
      clock: virtualClock(),
    });
    expect((await loop.run({ goal: 'Write a note.' })).stopReason).toBe('permission_denied');
  });

  it("tasks[].onFailure 'stop': a task that fails for good ends the run before the next task", async () => {
    const model = scriptedModel([reply('not json'), reply('still not json'), reply('never asked')]);
    const loop = createLoop({
      model,
      tasks: [
        { id: 'first', prompt: 'Answer in JSON.', evaluate: evaluators.json() },
        { id: 'second', prompt: 'Then this.' },
      ],
      limits: { maxRetries: 1 },
      clock: virtualClock(),
    });
    const result = await loop.run({ goal: 'Two tasks' });
    expect(result.stopReason).toBe('retries_exhausted');
    expect(model.calls).toHaveLength(2);
  });
});
