import { describe, expect, it } from 'vitest';
import type { ModelResponse } from '../../contracts/model.js';
import type { RunSession } from '../runtime/run-session.js';
import { mayWaitForApproval } from './approval-checks.js';

/** What `mayWaitForApproval` reads of a run: its policy and its tools' access. */
const sessionWith = (policy: Record<string, unknown> | undefined) =>
  ({
    config: { policy },
    tools: new Map([
      ['lookup', { access: 'read' }],
      ['charge', { access: 'destructive' }],
    ]),
  }) as unknown as RunSession;
const replyCalling = (...names: string[]): ModelResponse => ({
  text: null,
  toolCalls: names.map((name, index) => ({ id: `c${index}`, name, arguments: '{}' })),
  usage: { inputTokens: 1, outputTokens: 1 },
});

describe('mayWaitForApproval (whether a reply is worth a snapshot before it)', () => {
  it('is true for a reply calling a tool whose access the policy (or its default) holds for approval', () => {
    expect(mayWaitForApproval(replyCalling('lookup', 'charge'), sessionWith(undefined))).toBe(true);
    expect(mayWaitForApproval(replyCalling('lookup'), sessionWith({ requireApproval: ['read'] }))).toBe(true);
  });

  it('is false for a reply calling no held tool, no tool, or a tool the run does not have', () => {
    expect(mayWaitForApproval(replyCalling('lookup'), sessionWith(undefined))).toBe(false);
    expect(mayWaitForApproval(replyCalling(), sessionWith(undefined))).toBe(false);
    expect(mayWaitForApproval(replyCalling('missing'), sessionWith({ requireApproval: ['read'] }))).toBe(false);
    expect(mayWaitForApproval(replyCalling('charge'), sessionWith({ requireApproval: [] }))).toBe(false);
  });

  it('is false under a decide hook: it answers first and mostly lets such calls through (no snapshot a reply)', () => {
    const decide = () => 'allow' as const;
    expect(mayWaitForApproval(replyCalling('charge'), sessionWith({ decide }))).toBe(false);
    expect(mayWaitForApproval(replyCalling('lookup'), sessionWith({ requireApproval: ['read'], decide }))).toBe(false);
  });
});
