import { describe, expect, it } from 'vitest';
import {
  canContinueAfterTaskFailure,
  hasDeniedToolCall,
  hasInvalidToolCall,
  hasQueuedTask,
  hasRunStarted,
  hasToolCallNeedingApproval,
  hasUnavailableToolCall,
  hasUnknownToolOutcome,
  isFinalReply,
  isRequiredToolUnavailable,
  isUnparseableReply,
} from './decision.js';
import type { LoopEvent, TaskPlan } from '../machines/types.js';
import {
  backoffElapsed,
  contextWith,
  finalReply,
  modelResponded,
  toolCallsReply,
  toolsCompleted,
  unparseableReply,
} from '../test/support/statechart-fixtures.js';

const otherEvent: LoopEvent = backoffElapsed();
const context = contextWith();

describe('decision kind guards', () => {
  it('isFinalReply is true only for a final decision', () => {
    expect(isFinalReply({ context, event: finalReply() })).toBe(true);
    expect(isFinalReply({ context, event: toolCallsReply() })).toBe(false);
    expect(isFinalReply({ context, event: unparseableReply('empty_reply') })).toBe(false);
  });

  it('isUnparseableReply is true only for an unparseable decision', () => {
    expect(isUnparseableReply({ context, event: unparseableReply('empty_reply') })).toBe(true);
    expect(isUnparseableReply({ context, event: finalReply() })).toBe(false);
    expect(isUnparseableReply({ context, event: toolCallsReply({ invalidCalls: 1, parseError: 'bad_json' }) })).toBe(
      false,
    );
  });

  it.each([
    ['isFinalReply', isFinalReply],
    ['isUnparseableReply', isUnparseableReply],
    ['hasDeniedToolCall', hasDeniedToolCall],
    ['hasToolCallNeedingApproval', hasToolCallNeedingApproval],
    ['hasUnavailableToolCall', hasUnavailableToolCall],
    ['hasInvalidToolCall', hasInvalidToolCall],
  ])('%s is false for events other than model.responded', (_name, guard) => {
    expect(guard({ context, event: otherEvent })).toBe(false);
    expect(guard({ context, event: toolsCompleted({ unknownOutcomeCalls: 1, requiredToolUnavailable: true }) })).toBe(
      false,
    );
  });
});

describe('tool-call count guards', () => {
  it.each([
    ['hasDeniedToolCall', hasDeniedToolCall, 'deniedCalls'],
    ['hasToolCallNeedingApproval', hasToolCallNeedingApproval, 'approvalCalls'],
    ['hasUnavailableToolCall', hasUnavailableToolCall, 'unavailableCalls'],
    ['hasInvalidToolCall', hasInvalidToolCall, 'invalidCalls'],
  ] as const)('%s is false at 0 %s and true at 1', (_name, guard, field) => {
    expect(guard({ context, event: toolCallsReply({ calls: 3, [field]: 0 }) })).toBe(false);
    expect(guard({ context, event: toolCallsReply({ calls: 3, [field]: 1 }) })).toBe(true);
  });

  it('each count guard reads only its own field', () => {
    const onlyDenied = toolCallsReply({ calls: 2, deniedCalls: 1 });
    expect(hasDeniedToolCall({ context, event: onlyDenied })).toBe(true);
    expect(hasToolCallNeedingApproval({ context, event: onlyDenied })).toBe(false);
    expect(hasUnavailableToolCall({ context, event: onlyDenied })).toBe(false);
    expect(hasInvalidToolCall({ context, event: onlyDenied })).toBe(false);
  });

  it('tool-call guards are false for a final or unparseable decision', () => {
    for (const decision of [{ kind: 'final' }, { kind: 'unparseable', parseError: 'empty_reply' }] as const) {
      expect(hasDeniedToolCall({ context, event: modelResponded(decision) })).toBe(false);
      expect(hasInvalidToolCall({ context, event: modelResponded(decision) })).toBe(false);
    }
  });
});

describe('hasQueuedTask (read after completeTask advanced the index)', () => {
  const tasks: TaskPlan[] = [
    { id: 'a', onFailure: 'stop' },
    { id: 'b', onFailure: 'stop' },
    { id: 'c', onFailure: 'stop' },
  ];

  it('is true while the index points at a task and false once it is past the last one', () => {
    expect(hasQueuedTask({ context: contextWith({ tasks, taskIndex: 2 }), event: otherEvent })).toBe(true);
    expect(hasQueuedTask({ context: contextWith({ tasks, taskIndex: 3 }), event: otherEvent })).toBe(false);
  });
});

describe('canContinueAfterTaskFailure', () => {
  const tasks: TaskPlan[] = [
    { id: 'a', onFailure: 'continue' },
    { id: 'b', onFailure: 'stop' },
    { id: 'c', onFailure: 'continue' },
  ];

  it('is true for a continue task with another task queued after it', () => {
    expect(canContinueAfterTaskFailure({ context: contextWith({ tasks, taskIndex: 0 }), event: otherEvent })).toBe(
      true,
    );
  });

  it('is false for a stop task even with tasks queued', () => {
    expect(canContinueAfterTaskFailure({ context: contextWith({ tasks, taskIndex: 1 }), event: otherEvent })).toBe(
      false,
    );
  });

  it('is false for a continue task that is the last one', () => {
    expect(canContinueAfterTaskFailure({ context: contextWith({ tasks, taskIndex: 2 }), event: otherEvent })).toBe(
      false,
    );
  });

  it('is false when the index is past the task list', () => {
    expect(canContinueAfterTaskFailure({ context: contextWith({ tasks, taskIndex: 3 }), event: otherEvent })).toBe(
      false,
    );
  });
});

describe('hasRunStarted', () => {
  it('is false before startedAt is set and true after, even at time 0', () => {
    expect(hasRunStarted({ context: contextWith(), event: otherEvent })).toBe(false);
    expect(hasRunStarted({ context: contextWith({ startedAt: 0 }), event: otherEvent })).toBe(true);
  });
});

describe('tool round guards', () => {
  it('hasUnknownToolOutcome is false at 0 unknown outcomes and true at 1', () => {
    expect(
      hasUnknownToolOutcome({ context, event: toolsCompleted({ timedOutCalls: 1, unknownOutcomeCalls: 0 }) }),
    ).toBe(false);
    expect(
      hasUnknownToolOutcome({ context, event: toolsCompleted({ timedOutCalls: 1, unknownOutcomeCalls: 1 }) }),
    ).toBe(true);
  });

  it('isRequiredToolUnavailable follows the round flag, not failed calls', () => {
    expect(isRequiredToolUnavailable({ context, event: toolsCompleted({ failedCalls: 1 }) })).toBe(false);
    expect(isRequiredToolUnavailable({ context, event: toolsCompleted({ requiredToolUnavailable: true }) })).toBe(true);
  });

  it('both are false for events other than tools.completed', () => {
    const event = toolCallsReply({ unavailableCalls: 1 });
    expect(hasUnknownToolOutcome({ context, event })).toBe(false);
    expect(isRequiredToolUnavailable({ context, event })).toBe(false);
  });
});
