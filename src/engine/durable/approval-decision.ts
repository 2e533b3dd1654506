/**
 * A person's decisions turned into the decision the machine would have seen had the policy allowed
 * the approved calls: approved calls become ready (within the reply's and the run's tool-call caps,
 * and once per identical call), rejected ones are answered with the person's reason, so the model
 * hears it. The rewritten `model.responded` replaces the one that stopped the run.
 */
import type { LoopContext, LoopEvent } from '../../../machines/types.js';
import { toolCallRoom } from '../runtime/model-step.js';
import type { PendingCall, RunSession } from '../runtime/run-session.js';
import type { Decisions } from './records.js';
import { duplicateInReplyAnswer, rejectedByPersonAnswer } from '../prompts.js';

export function applyApprovals(
  session: RunSession,
  stopEvent: LoopEvent,
  decisions: Decisions,
  context: LoopContext,
): LoopEvent {
  if (stopEvent.type !== 'model.responded' || stopEvent.decision.kind !== 'tool_calls') {
    throw new Error(`a run waiting for approval stopped on ${stopEvent.type}, not on a reply with tool calls`);
  }
  const cap = toolCallRoom(context);
  const taken = new Set<string>();
  for (const { call, fingerprint, refusal } of session.pendingCalls)
    if (call.status === 'ready' && refusal === null) taken.add(fingerprint);
  let refusedCalls = stopEvent.decision.refusedCalls;
  const calls = session.pendingCalls.map((pending): PendingCall => {
    if (pending.call.status !== 'needs_approval') return pending;
    const decision = decisions.get(pending.call.request.id);
    if (decision === undefined) return pending;
    session.record({
      type: 'approval-decided',
      runId: session.runId,
      at: stopEvent.at,
      callId: pending.call.request.id,
      tool: pending.call.request.name,
      approved: decision.approve,
      reason: decision.approve ? null : decision.reason,
    });
    if (!decision.approve) {
      refusedCalls++;
      const message = rejectedByPersonAnswer(pending.call.request.name, decision.reason);
      return {
        ...pending,
        call: { ...pending.call, status: 'denied' },
        refusal: { reason: 'rejected by a person', message },
      };
    }
    const ready: PendingCall = { ...pending, call: { ...pending.call, status: 'ready' } };
    if (taken.has(pending.fingerprint)) {
      refusedCalls++;
      return {
        ...ready,
        refusal: { reason: 'duplicate in the reply', message: duplicateInReplyAnswer(pending.call.request.name) },
      };
    }
    if (taken.size >= cap.room) {
      refusedCalls++;
      return { ...ready, refusal: cap.refusal(pending.call.request.name) };
    }
    taken.add(pending.fingerprint);
    return ready;
  });
  session.holdCalls(calls);
  const stillBlocked = calls.find(
    ({ call }) =>
      call.status === 'unavailable' &&
      (session.task.requires === undefined || session.task.requires.includes(call.request.name)),
  );
  return {
    ...stopEvent,
    decision: {
      ...stopEvent.decision,
      approvalCalls: 0,
      refusedCalls,
      blockedTool: stillBlocked?.call.request.name ?? null,
    },
  };
}
