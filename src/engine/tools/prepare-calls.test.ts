import { describe, expect, it, vi } from 'vitest';
import { z } from 'zod';
import { LoopConfigError } from '../../contracts/errors.js';
import type { ToolCallRequest } from '../../contracts/model.js';
import { defineTool, type Tool, type ToolAccess } from './define-tool.js';
import type { ToolPolicy } from './policy.js';
import { prepareToolCalls, type PrepareToolCallsOptions } from './prepare-calls.js';
import { ToolHealth } from './tool-health.js';

const orderInput = z.object({
  order_id: z.string().regex(/^O-\d+$/),
  quantity: z.number().int().min(1).default(1),
  lines: z.array(z.object({ sku: z.string() })).optional(),
});

const orderTool = (name: string, access: ToolAccess): Tool =>
  defineTool({ name, description: `${name} an order`, input: orderInput, access, execute: () => 'done' });

const getOrder = orderTool('get_order', 'read');
const updateOrder = orderTool('update_order', 'write');
const deleteOrder = orderTool('delete_order', 'destructive');
const tools = new Map([getOrder, updateOrder, deleteOrder].map((tool) => [tool.name, tool]));

const call = (name: string, args: unknown, id = 'call_1'): ToolCallRequest => ({
  id,
  name,
  arguments: typeof args === 'string' ? args : JSON.stringify(args),
});

const prepareOne = (request: ToolCallRequest, options: Partial<PrepareToolCallsOptions> = {}) => {
  const [prepared] = prepareToolCalls([request], { tools, policy: undefined, health: new ToolHealth(), ...options });
  if (!prepared) throw new Error('prepareToolCalls returned no call');
  return prepared;
};

describe('prepareToolCalls', () => {
  it('marks a valid call ready with the schema output as its arguments', () => {
    const request = call('get_order', { order_id: 'O-1' });
    expect(prepareOne(request)).toEqual({
      request,
      tool: getOrder,
      status: 'ready',
      args: { order_id: 'O-1', quantity: 1 },
      error: null,
    });
  });

  it('treats empty arguments as an empty object', () => {
    const noArguments = defineTool({
      name: 'ping',
      description: 'Ping',
      input: z.object({}),
      access: 'read',
      execute: () => 'pong',
    });
    const prepared = prepareOne(call('ping', '  '), { tools: new Map([['ping', noArguments]]) });
    expect(prepared).toMatchObject({ status: 'ready', args: {} });
  });

  it('classifies each call of a round on its own, keeping their order', () => {
    const prepared = prepareToolCalls(
      [
        call('get_order', { order_id: 'O-1' }, 'a'),
        call('nope', {}, 'b'),
        call('delete_order', { order_id: 'O-2' }, 'c'),
      ],
      { tools, policy: undefined, health: new ToolHealth() },
    );
    expect(prepared.map((entry) => [entry.request.id, entry.status])).toEqual([
      ['a', 'ready'],
      ['b', 'invalid'],
      ['c', 'needs_approval'],
    ]);
  });

  it('rejects an unknown tool, listing the available ones', () => {
    const prepared = prepareOne(call('get_ordr', { order_id: 'O-1' }));
    expect(prepared.status).toBe('invalid');
    expect(prepared.tool).toBeUndefined();
    expect(prepared.args).toEqual({ order_id: 'O-1' });
    expect(prepared.error?.key).toBe('unknown_tool:get_ordr');
    expect(prepared.error?.message).toBe(
      'Unknown tool "get_ordr". Available tools: get_order, update_order, delete_order.',
    );
  });

  it('says so when no tools exist at all', () => {
    const prepared = prepareOne(call('anything', '{'), { tools: new Map() });
    expect(prepared).toMatchObject({ status: 'invalid', args: undefined, error: { key: 'unknown_tool:anything' } });
    expect(prepared.error?.message).toContain('No tools are available');
  });

  it('rejects malformed JSON with the parse error in the message', () => {
    const prepared = prepareOne(call('get_order', '{"order_id": "O-1",'));
    expect(prepared.status).toBe('invalid');
    expect(prepared.args).toBeUndefined();
    expect(prepared.error?.key).toBe('malformed_arguments:get_order');
    expect(prepared.error?.message).toMatch(/not valid JSON \(.*JSON.*\)/);
    expect(prepared.error?.detail).toMatch(/^not valid JSON \(.*JSON.*\)$/);
  });

  it('turns zod issues into a field-by-field message and keys the error by the first path', () => {
    const prepared = prepareOne(call('get_order', { order_id: 'X-1', quantity: 0, lines: [{ sku: 7 }] }));
    expect(prepared.status).toBe('invalid');
    expect(prepared.args).toEqual({ order_id: 'X-1', quantity: 0, lines: [{ sku: 7 }] });
    expect(prepared.error?.key).toBe('invalid_arguments:get_order:order_id');
    expect(prepared.error?.message).toBe(
      [
        'Tool get_order was called with invalid arguments:',
        '- order_id: Invalid string: must match pattern /^O-\\d+$/',
        '- quantity: Too small: expected number to be >=1',
        '- lines[0].sku: Invalid input: expected string, received number',
        'Fix these fields and call it again.',
      ].join('\n'),
    );
    // The same issues on one line, for the trace and the progress view.
    expect(prepared.error?.detail).toBe(
      'order_id: Invalid string: must match pattern /^O-\\d+$/; quantity: Too small: expected number to be >=1; lines[0].sku: Invalid input: expected string, received number',
    );
  });

  it('names the root when the arguments are not an object', () => {
    const prepared = prepareOne(call('get_order', '[1, 2]'));
    expect(prepared.error?.key).toBe('invalid_arguments:get_order:(root)');
    expect(prepared.error?.message).toContain('- (root): Invalid input: expected object, received array');
  });

  it('reports a missing field by its path', () => {
    const prepared = prepareOne(call('get_order', {}));
    expect(prepared.error?.key).toBe('invalid_arguments:get_order:order_id');
    expect(prepared.error?.message).toContain('- order_id: Invalid input: expected string, received undefined');
  });

  it('withholds a tool whose circuit is open, before the policy or arguments are considered', () => {
    const health = new ToolHealth({ threshold: 2 });
    health.recordFailure('delete_order', 1);
    health.recordFailure('delete_order', 1);
    const decide = vi.fn(() => 'deny' as const);
    const prepared = prepareOne(call('delete_order', 'not json'), { health, policy: { decide } });
    expect(prepared.status).toBe('unavailable');
    expect(prepared.error?.key).toBe('tool_unavailable:delete_order');
    expect(prepared.error?.message).toContain('failed 2 or more times in a row');
    expect(decide).not.toHaveBeenCalled();
    expect(prepareOne(call('get_order', { order_id: 'O-1' }), { health }).status).toBe('ready');
  });

  it('denies by policy, even when the arguments are invalid', () => {
    const readOnly: ToolPolicy = { allow: ['read'], requireApproval: [] };
    const valid = prepareOne(call('update_order', { order_id: 'O-1' }), { policy: readOnly });
    expect(valid).toMatchObject({ status: 'denied', error: { key: 'permission_denied:update_order' } });
    expect(valid.error?.message).toContain('not permitted');
    expect(prepareOne(call('update_order', '{oops'), { policy: readOnly }).status).toBe('denied');
    expect(prepareOne(call('update_order', { order_id: 'bad' }), { policy: readOnly }).status).toBe('denied');
  });

  it('holds a destructive call for approval only once its arguments are valid', () => {
    const valid = prepareOne(call('delete_order', { order_id: 'O-9' }));
    expect(valid).toMatchObject({
      status: 'needs_approval',
      args: { order_id: 'O-9', quantity: 1 },
      error: { key: 'needs_approval:delete_order' },
    });
    // A person is never asked to approve a call that could not run: the model repairs it first.
    const invalid = prepareOne(call('delete_order', { order_id: 'nine' }));
    expect(invalid).toMatchObject({ status: 'invalid', error: { key: 'invalid_arguments:delete_order:order_id' } });
  });

  it('gives the decide hook the parsed arguments, and lets it deny or require approval per call', () => {
    const decide = vi.fn(({ args }: { args: unknown }) =>
      (args as { quantity: number }).quantity > 10 ? 'needs_approval' : undefined,
    );
    const policy: ToolPolicy = { decide };
    expect(prepareOne(call('update_order', { order_id: 'O-1', quantity: 50 }), { policy }).status).toBe(
      'needs_approval',
    );
    expect(prepareOne(call('update_order', { order_id: 'O-1' }), { policy }).status).toBe('ready');
    expect(decide).toHaveBeenLastCalledWith(
      expect.objectContaining({ tool: updateOrder, args: { order_id: 'O-1', quantity: 1 } }),
    );
    expect(prepareOne(call('get_order', { order_id: 'O-1' }), { policy: { decide: () => 'deny' } }).status).toBe(
      'denied',
    );
  });

  it('does not call decide with invalid arguments, but still applies the access lists', () => {
    const decide = vi.fn(() => 'allow' as const);
    expect(prepareOne(call('get_order', '{'), { policy: { decide } }).status).toBe('invalid');
    expect(prepareOne(call('get_order', { order_id: 1 }), { policy: { decide } }).status).toBe('invalid');
    expect(decide).not.toHaveBeenCalled();
    expect(prepareOne(call('get_order', { order_id: 1 }), { policy: { decide, allow: [] } }).status).toBe('denied');
  });

  it('throws a config error for a schema that cannot validate synchronously, since the model cannot fix it', () => {
    const asyncTool = defineTool({
      name: 'async_check',
      description: 'Has an async refinement',
      input: z.object({ id: z.string().refine(async () => true) }),
      access: 'read',
      execute: () => 'ok',
    });
    const run = () => prepareOne(call('async_check', { id: 'a' }), { tools: new Map([['async_check', asyncTool]]) });
    expect(run).toThrow(LoopConfigError);
    expect(run).toThrow(/tools\.async_check\.input/);
  });

  it('answers arguments nested too deeply for a recursive schema as invalid, for the model to repair', () => {
    interface Node {
      child?: Node;
    }
    const node: z.ZodType<Node> = z.lazy(() => z.object({ child: node.optional() }));
    const treeTool = defineTool({
      name: 'tree',
      description: 'Stores a tree',
      input: z.object({ root: node }),
      access: 'read',
      execute: () => 'ok',
    });
    const depth = 20_000;
    const deep = `{"root":${'{"child":'.repeat(depth)}{}${'}'.repeat(depth)}}`;
    const prepared = prepareOne(call('tree', deep), { tools: new Map([['tree', treeTool]]) });
    expect(prepared.status).toBe('invalid');
    expect(prepared.error).toEqual({
      key: 'arguments_too_deep:tree',
      message: expect.stringContaining('arguments nested too deeply'),
      detail: 'nested too deeply to validate',
    });
  });
});
