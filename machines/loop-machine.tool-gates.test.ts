/**
 * The loop machine's checks on a tool-call decision and a tool round: denied calls, unavailable tools,
 * and calls that need a person.
 */
import { describe, expect, it } from 'vitest';
import { getPendingEffect } from './pending-effect.js';
import {
  callModelEffect,
  expectStop,
  send,
  startedRun,
  toolCallsReply,
  toolsCompleted,
} from '../test/support/statechart-fixtures.js';

describe('permission_denied', () => {
  it('stops without running any call of a reply with a denied call', () => {
    const output = expectStop(send(startedRun(), toolCallsReply({ calls: 2, deniedCalls: 1 })), 'permission_denied');
    expect(output.usage.toolCalls).toBe(0);
    expect(output.detail).toContain('denied');
  });

  it('wins over a call needing approval in the same reply', () => {
    expectStop(send(startedRun(), toolCallsReply({ calls: 2, deniedCalls: 1, approvalCalls: 1 })), 'permission_denied');
  });
});

describe('tool_unavailable', () => {
  it('stops on a call to a tool whose circuit is open', () => {
    const output = expectStop(send(startedRun(), toolCallsReply({ unavailableCalls: 1 })), 'tool_unavailable');
    expect(output.usage.toolCalls).toBe(0);
  });

  it('stops after a round in which a tool the task requires became unavailable', () => {
    const lostRequiredTool = toolsCompleted({ calls: 2, failedCalls: 1, requiredToolUnavailable: true });
    const output = expectStop(send(startedRun(), toolCallsReply({ calls: 2 }), lostRequiredTool), 'tool_unavailable');
    expect(output.usage.toolCalls).toBe(2);
  });

  it('goes on after a round with failed calls when no required tool is lost', () => {
    expect(getPendingEffect(send(startedRun(), toolCallsReply(), toolsCompleted({ failedCalls: 1 })))).toEqual(
      callModelEffect(),
    );
  });
});

describe('needs_human', () => {
  it('stops before running a reply with a call that needs approval', () => {
    const output = expectStop(send(startedRun(), toolCallsReply({ calls: 2, approvalCalls: 1 })), 'needs_human');
    expect(output.status).toBe('needs_human');
    expect(output.usage.toolCalls).toBe(0);
    expect(output.detail).toContain('approval');
  });

  it('stops after a round with a side effect whose outcome cannot be known', () => {
    const unknownOutcome = toolsCompleted({ timedOutCalls: 1, unknownOutcomeCalls: 1 });
    const output = expectStop(send(startedRun(), toolCallsReply(), unknownOutcome), 'needs_human');
    expect(output.detail).toContain('outcome cannot be known');
  });

  it('goes on after a timed-out call whose outcome is known', () => {
    const knownTimeout = toolsCompleted({ timedOutCalls: 1, failedCalls: 1 });
    expect(getPendingEffect(send(startedRun(), toolCallsReply(), knownTimeout))).toEqual(callModelEffect());
  });
});
