import { describe, expect, it } from 'vitest';
import { z } from 'zod';
import { createRedactor } from '../redaction/redact.js';
import { defineTool, prepareToolCalls, ToolHealth, type PreparedCall } from '../tools/index.js';
import { MAX_TRACED_ARGUMENT_ERRORS, tracedArgumentErrors } from './argument-errors.js';
import { rebuildRun } from './rebuild-run.js';
import { parseTraceText } from './trace-file.js';
import { traceEventSchema, type TraceEvent } from '../../contracts/trace-schema.js';

const lookupOrder = defineTool({
  name: 'lookup_order',
  description: 'Looks an order up',
  input: z.object({
    orderId: z.string().regex(/^O-\d+$/, 'expected string matching /^O-\\d+$/'),
    note: z
      .string()
      .max(10, { error: (issue) => `not a note: ${String(issue.input)}` })
      .optional(),
  }),
  access: 'read',
  execute: () => 'found',
});
const tagOrders = defineTool({
  name: 'tag_orders',
  description: 'Tags orders',
  input: z.object({ tags: z.array(z.string()) }),
  access: 'write',
  execute: () => 'tagged',
});
const tools = new Map([lookupOrder, tagOrders].map((tool) => [tool.name, tool]));
const redact = createRedactor();

/** The reply's calls as the driver holds them: prepared, waiting to be answered or run. */
const pending = (...calls: { id: string; name: string; args: unknown }[]): { call: PreparedCall }[] =>
  prepareToolCalls(
    calls.map(({ id, name, args }) => ({
      id,
      name,
      arguments: typeof args === 'string' ? args : JSON.stringify(args),
    })),
    { tools, policy: undefined, health: new ToolHealth() },
  ).map((call) => ({ call }));

describe('tracedArgumentErrors', () => {
  it('says where malformed JSON broke without quoting it (the parser quotes the text, which may hold a secret), and bounds an overlong id', () => {
    const calls = pending(
      { id: 'c1', name: 'lookup_order', args: '{"orderId": "O-1", "password": hunter2-secret' },
      { id: 'c2', name: 'lookup_order', args: '{"orderId": "O-1"' },
      { id: 'x'.repeat(500), name: 'lookup_order', args: { orderId: 'nope' } },
    );
    const traced = tracedArgumentErrors(calls, redact);
    for (const error of [traced[0]?.error, traced[1]?.error])
      expect(error).toMatch(/^not valid JSON \([^"]*JSON[^"]*\)$/);
    expect(JSON.stringify(traced)).not.toContain('hunter2');
    expect(traced[2]?.callId.length).toBeLessThan(260);
    expect(traced[2]?.callId).toContain('(500 chars)');
  });

  it('names each invalid call with its field errors, in reply order, and leaves valid calls out', () => {
    const calls = pending(
      { id: 'c1', name: 'lookup_order', args: { orderId: '101' } },
      { id: 'c2', name: 'lookup_order', args: { orderId: 'O-7' } },
      { id: 'c3', name: 'lookup_order', args: { orderId: 7, note: 'far too long a note' } },
      { id: 'c4', name: 'find_order', args: {} },
    );
    expect(tracedArgumentErrors(calls, redact)).toEqual([
      { callId: 'c1', name: 'lookup_order', error: 'orderId: expected string matching /^O-\\d+$/' },
      {
        callId: 'c3',
        name: 'lookup_order',
        error: 'orderId: Invalid input: expected string, received number; note: not a note: far too long a note',
      },
      { callId: 'c4', name: 'find_order', error: 'no tool of that name' },
    ]);
  });

  it('is bounded: at most the first few calls, each error cut to a summary', () => {
    const many = Array.from({ length: 12 }, (_, index) => ({
      id: `c${index}`,
      name: 'lookup_order',
      args: { orderId: String(index) },
    }));
    const errors = tracedArgumentErrors(pending(...many), redact);
    expect(errors).toHaveLength(MAX_TRACED_ARGUMENT_ERRORS);
    expect(errors[0]?.callId).toBe('c0');
    // 500 issues, one per tag: the detail runs to tens of thousands of characters, the trace keeps a summary.
    const [long] = tracedArgumentErrors(
      pending({ id: 'c1', name: 'tag_orders', args: { tags: Array.from({ length: 500 }, (_, index) => index) } }),
      redact,
    );
    expect(long?.error).toMatch(
      /^tags\[0\]: Invalid input: expected string, received number; tags\[1\]: .*…\(\d+ chars\)$/,
    );
    expect(long?.error.length).toBeLessThan(220);
  });

  it('redacts a secret the error quotes (a schema message may repeat the input)', () => {
    const [error] = tracedArgumentErrors(
      pending({ id: 'c1', name: 'lookup_order', args: { orderId: 'O-1', note: 'sk-live-4eC39HqLyjWDarjtT1zdp7dc' } }),
      redact,
    );
    expect(error?.error).toBe('note: not a note: [redacted]');
  });

  it("falls back to the error's key for a call restored from a durable journal (no detail)", () => {
    const [restored] = pending({ id: 'c1', name: 'lookup_order', args: { orderId: '101' } });
    const withoutDetail = {
      call: { ...restored!.call, error: { key: restored!.call.error!.key, message: restored!.call.error!.message } },
    };
    expect(tracedArgumentErrors([withoutDetail], redact)).toEqual([
      { callId: 'c1', name: 'lookup_order', error: 'invalid_arguments:lookup_order:orderId' },
    ]);
  });
});

describe('the retry event with and without argumentErrors', () => {
  const at = { runId: 'r1', at: 10 };
  const repair = {
    type: 'retry',
    ...at,
    taskId: 'main',
    step: 1,
    layer: 'argument_repair',
    counter: 1,
    delayMs: 0,
  } as const;
  const withErrors = {
    ...repair,
    argumentErrors: [{ callId: 'c1', name: 'lookup_order', error: 'orderId: expected string matching /^O-\\d+$/' }],
  };
  const lines = (retry: object): string =>
    [
      {
        type: 'run-start',
        ...at,
        at: 0,
        schemaVersion: 1,
        goalSummary: 'g',
        tasks: ['main'],
        modelId: 'm',
        promptVersion: 'p',
        limits: Object.fromEntries(
          [
            'maxSteps',
            'maxStepsPerTask',
            'maxRetries',
            'deadlineMs',
            'maxInputTokens',
            'maxOutputTokens',
            'maxCostUsd',
            'maxParallelTools',
            'maxToolCalls',
            'maxToolCallsPerReply',
            'maxToolResultBytes',
            'maxArgumentRepairs',
            'modelCallTimeoutMs',
          ].map((key) => [key, null]),
        ),
      },
      retry,
    ]
      .map((event) => JSON.stringify(event))
      .join('\n') + '\n';

  it('validates both ways: the field is optional and kept when present', () => {
    expect(traceEventSchema.parse(repair)).toEqual(repair);
    expect(traceEventSchema.parse(withErrors)).toEqual(withErrors);
    expect(
      traceEventSchema.safeParse({ ...repair, argumentErrors: [{ callId: 'c1', name: 'lookup_order' }] }).success,
    ).toBe(false);
  });

  it('reads from a JSONL file and rebuilds the run either way', () => {
    for (const retry of [repair, withErrors]) {
      const { events } = parseTraceText(lines(retry));
      expect(events[1]).toEqual(retry);
      expect(rebuildRun(events as TraceEvent[]).retries).toEqual({ transport: 0, reflection: 0, argument_repair: 1 });
    }
  });
});
