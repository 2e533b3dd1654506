import { describe, expect, it } from 'vitest';
import { z } from 'zod';
import { DEFAULT_TOOL_TIMEOUT_MS } from '../constants.js';
import { LoopConfigError } from '../../contracts/errors.js';
import { defineTool, idempotencyKey, type ToolContext, type ToolDefinition } from './define-tool.js';

const orderInput = z.object({ order_id: z.string().regex(/^O-\d+$/), verbose: z.boolean().default(false) });

const validDefinition = {
  name: 'get_order_status',
  description: 'Look up the status of an order',
  input: orderInput,
  access: 'read',
  execute: ({ order_id }: z.output<typeof orderInput>) => ({ order_id, status: 'shipped' }),
} satisfies ToolDefinition<typeof orderInput>;

/** Runs defineTool on a broken definition and returns the LoopConfigError it must throw. */
function configErrorOf(definition: unknown): LoopConfigError {
  try {
    defineTool(definition as ToolDefinition<z.ZodType>);
  } catch (error) {
    if (error instanceof LoopConfigError) return error;
    throw error;
  }
  throw new Error('defineTool accepted an invalid definition');
}

const context: ToolContext = { signal: new AbortController().signal, idempotencyKey: 'r:1:c', runId: 'r', callId: 'c' };

describe('defineTool', () => {
  it('resolves defaults: timeout from constants, read tools idempotent, others not', () => {
    const read = defineTool(validDefinition);
    expect(read.timeoutMs).toBe(DEFAULT_TOOL_TIMEOUT_MS);
    expect(read.idempotent).toBe(true);
    expect(defineTool({ ...validDefinition, access: 'write' }).idempotent).toBe(false);
    expect(defineTool({ ...validDefinition, access: 'destructive' }).idempotent).toBe(false);
  });

  it('keeps explicit timeout and idempotency', () => {
    const tool = defineTool({ ...validDefinition, access: 'write', timeoutMs: 250, idempotent: true });
    expect(tool.timeoutMs).toBe(250);
    expect(tool.idempotent).toBe(true);
    expect(defineTool({ ...validDefinition, idempotent: false }).idempotent).toBe(false);
  });

  it('computes the JSON Schema of the input side once, without $schema', () => {
    const tool = defineTool(validDefinition);
    expect(tool.spec).toEqual({
      name: 'get_order_status',
      description: 'Look up the status of an order',
      parameters: {
        type: 'object',
        properties: {
          order_id: { type: 'string', pattern: '^O-\\d+$' },
          verbose: { type: 'boolean', default: false },
        },
        // A field with a default is optional for the model, which writes the input.
        required: ['order_id'],
      },
    });
    expect(tool.spec).toBe(tool.spec);
    expect(tool.spec.parameters).not.toHaveProperty('$schema');
  });

  it('accepts schemas with transforms, since the model only sees the input side', () => {
    const tool = defineTool({
      ...validDefinition,
      input: z.object({ tags: z.string().transform((tags) => tags.split(',')) }),
      execute: ({ tags }) => tags.length,
    });
    expect(tool.spec.parameters).toMatchObject({ properties: { tags: { type: 'string' } } });
  });

  it('passes arguments and context through to execute and checkOutcome, keeping `this`', async () => {
    const tool = defineTool({
      ...validDefinition,
      access: 'write',
      prefix: 'order',
      execute(this: { prefix: string }, args: { order_id: string }, toolContext: ToolContext) {
        return `${this.prefix}:${args.order_id}:${toolContext.idempotencyKey}`;
      },
      checkOutcome: (_args: unknown, toolContext: ToolContext) => ({
        status: 'done' as const,
        result: toolContext.callId,
      }),
    } as ToolDefinition<typeof orderInput>);
    expect(await tool.execute({ order_id: 'O-1' }, context)).toBe('order:O-1:r:1:c');
    expect(await tool.checkOutcome?.({ order_id: 'O-1' }, context)).toEqual({ status: 'done', result: 'c' });
    expect(defineTool(validDefinition).checkOutcome).toBeUndefined();
  });

  it('returns a frozen tool', () => {
    const tool = defineTool(validDefinition);
    expect(Object.isFrozen(tool)).toBe(true);
    expect(Object.isFrozen(tool.spec)).toBe(true);
  });

  it.each([
    ['name', { name: 'get order' }],
    ['name', { name: '' }],
    ['name', { name: 'x'.repeat(65) }],
    ['name', { name: 42 }],
    ['description', { description: '   ' }],
    ['description', { description: undefined }],
    ['access', { access: 'admin' }],
    ['timeoutMs', { timeoutMs: 0 }],
    ['timeoutMs', { timeoutMs: -5 }],
    ['timeoutMs', { timeoutMs: 1.5 }],
    ['timeoutMs', { timeoutMs: 2 ** 31 }],
    ['idempotent', { idempotent: 'yes' }],
    ['execute', { execute: 'not a function' }],
    ['checkOutcome', { checkOutcome: {} }],
    ['input', { input: { type: 'object' } }],
  ])('rejects a bad %s with LoopConfigError naming the field (%j)', (path, override) => {
    const error = configErrorOf({ ...validDefinition, ...override });
    expect(error.code).toBe('invalid_config');
    expect(error.issues.map((issue) => issue.path)).toEqual([path]);
    expect(error.message).toContain(`${path}:`);
  });

  it('names every bad field at once', () => {
    const error = configErrorOf({ ...validDefinition, name: 'bad name', timeoutMs: 0, access: 'root' });
    expect(error.issues.map((issue) => issue.path).sort()).toEqual(['access', 'name', 'timeoutMs']);
  });

  it('rejects a definition that is not an object at the root', () => {
    expect(configErrorOf(null).issues).toEqual([{ path: '', message: expect.stringContaining('expected object') }]);
  });

  it('rejects an input schema that is not an object, since tool arguments are a JSON object', () => {
    const error = configErrorOf({ ...validDefinition, input: z.string() });
    expect(error.issues).toEqual([{ path: 'input', message: expect.stringContaining('must describe an object') }]);
  });

  it('rejects an input schema JSON Schema cannot represent', () => {
    const error = configErrorOf({ ...validDefinition, input: z.object({ id: z.bigint() }) });
    expect(error.issues).toEqual([{ path: 'input', message: expect.stringContaining('BigInt cannot be represented') }]);
  });
});

describe('defineTool secrets', () => {
  const base = {
    name: 'ping',
    description: 'Ping',
    input: z.object({}),
    access: 'read' as const,
    execute: () => 'pong',
  };

  it('keeps the secrets a tool carries, frozen, and leaves the field out when there are none', () => {
    const tool = defineTool({ ...base, secrets: ['tok_0123456789'] });
    expect(tool.secrets).toEqual(['tok_0123456789']);
    expect(Object.isFrozen(tool.secrets)).toBe(true);
    expect('secrets' in defineTool({ ...base, secrets: [] })).toBe(false);
  });

  it('refuses secrets that are not strings', () => {
    expect(() => defineTool({ ...base, secrets: [42] as unknown as string[] })).toThrow(/secrets\[0\]/);
  });
});

describe('idempotencyKey', () => {
  it('joins run, step and call ids in that order', () => {
    expect(idempotencyKey('run_1', '3', 'call_0')).toBe('run_1:3:call_0');
  });
});
