import { describe, expect, it, vi } from 'vitest';
import { z } from 'zod';
import { LoopConfigError } from '../../contracts/errors.js';
import { defineTool, type ToolAccess } from './define-tool.js';
import { checkToolPolicy, type PolicyVerdict, type ToolPolicy } from './policy.js';

const toolWith = (access: ToolAccess, name = `${access}_tool`) =>
  defineTool({
    name,
    description: `A ${access} tool`,
    input: z.object({ amount: z.number() }),
    access,
    execute: () => 'ok',
  });

const read = toolWith('read');
const write = toolWith('write');
const destructive = toolWith('destructive');

describe('checkToolPolicy', () => {
  it('by default allows read and write, and holds destructive tools for approval', () => {
    expect(checkToolPolicy(undefined, read, {})).toBe('allow');
    expect(checkToolPolicy(undefined, write, {})).toBe('allow');
    expect(checkToolPolicy(undefined, destructive, {})).toBe('needs_approval');
    expect(checkToolPolicy({}, destructive, {})).toBe('needs_approval');
  });

  it('denies an access level that is in neither list', () => {
    const readOnly: ToolPolicy = { allow: ['read'], requireApproval: [] };
    expect(checkToolPolicy(readOnly, read, {})).toBe('allow');
    expect(checkToolPolicy(readOnly, write, {})).toBe('deny');
    expect(checkToolPolicy(readOnly, destructive, {})).toBe('deny');
    expect(checkToolPolicy({ allow: [], requireApproval: [] }, read, {})).toBe('deny');
  });

  it('lets a custom approval list hold writes, and keeps the default approval list when only allow is given', () => {
    expect(checkToolPolicy({ requireApproval: ['write', 'destructive'] }, write, {})).toBe('needs_approval');
    expect(checkToolPolicy({ requireApproval: ['write', 'destructive'] }, read, {})).toBe('allow');
    // Allowing destructive tools does not drop the default approval requirement.
    expect(checkToolPolicy({ allow: ['read', 'write', 'destructive'] }, destructive, {})).toBe('needs_approval');
    expect(checkToolPolicy({ allow: ['destructive'], requireApproval: [] }, destructive, {})).toBe('allow');
  });

  it('lets decide override the lists, and falls back to them when it returns undefined', () => {
    const policy: ToolPolicy = {
      decide: ({ tool, args }) => {
        if (tool.access === 'read') return 'deny';
        return (args as { amount: number }).amount > 100 ? 'needs_approval' : undefined;
      },
    };
    expect(checkToolPolicy(policy, read, { amount: 1 })).toBe('deny');
    expect(checkToolPolicy(policy, write, { amount: 500 })).toBe('needs_approval');
    expect(checkToolPolicy(policy, write, { amount: 5 })).toBe('allow');
    expect(checkToolPolicy({ ...policy, decide: () => 'allow' }, destructive, { amount: 5 })).toBe('allow');
  });

  it('asks decide on every call with the tool and its arguments, never caching a verdict', () => {
    const verdicts: PolicyVerdict[] = ['allow', 'deny', 'needs_approval'];
    const decide = vi.fn(() => verdicts.shift());
    const policy: ToolPolicy = { decide };
    expect(checkToolPolicy(policy, write, { amount: 1 })).toBe('allow');
    expect(checkToolPolicy(policy, write, { amount: 1 })).toBe('deny');
    expect(checkToolPolicy(policy, write, { amount: 1 })).toBe('needs_approval');
    expect(decide).toHaveBeenCalledTimes(3);
    expect(decide).toHaveBeenCalledWith({ tool: write, args: { amount: 1 }, runId: '', callId: '' });
  });

  it('sees a changed policy object at once', () => {
    const policy: { allow: ToolAccess[] } = { allow: ['read', 'write'] };
    expect(checkToolPolicy(policy, write, {})).toBe('allow');
    policy.allow = ['read'];
    expect(checkToolPolicy(policy, write, {})).toBe('deny');
  });

  it('throws when decide returns something other than a verdict', () => {
    const policy = { decide: () => 'yes' } as unknown as ToolPolicy;
    expect(() => checkToolPolicy(policy, read, {})).toThrow(LoopConfigError);
    expect(() => checkToolPolicy(policy, read, {})).toThrow(/policy\.decide: returned "yes"/);
  });

  it('lets an error thrown by decide propagate rather than allow or deny silently', () => {
    const policy: ToolPolicy = {
      decide: () => {
        throw new Error('policy service down');
      },
    };
    expect(() => checkToolPolicy(policy, read, {})).toThrow('policy service down');
  });
});
