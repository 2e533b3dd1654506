/**
 * Each stop reason in one plain sentence, for the viewer and anyone printing a result. Typed as a
 * record over `StopReason`, so a new reason cannot ship without its sentence.
 */
import type { StopReason } from '../../../machines/types.js';

const SENTENCES: Readonly<Record<StopReason, string>> = {
  completed:
    'Every task produced an answer its evaluators accepted (a task without evaluators accepts its first answer), so the run finished.',
  max_steps:
    'The run used all the model decisions its step limit allowed (maxSteps, or maxStepsPerTask for one task) before an answer passed.',
  deadline_exceeded: 'The run reached its end-to-end deadline (deadlineMs) and was stopped where it stood.',
  budget_exhausted:
    'A spend budget ran out (input tokens, output tokens, cost, or tool calls), so no further call was paid for.',
  no_progress:
    'The loop kept repeating itself after it had been nudged once (same calls and results, same errors or same rejection), so it was stopped.',
  permission_denied: 'The model asked for a tool call that the tool policy forbids, and denials stop the run.',
  tool_unavailable:
    'A tool the run needed was withheld because its circuit breaker had opened after repeated failures.',
  cancelled: 'The caller cancelled the run through its abort signal.',
  needs_human:
    'The run is waiting for a person: a tool call needs approval, an output needs review, or a side effect’s outcome cannot be known without someone checking.',
  retries_exhausted:
    'A task kept failing (model errors, rejected answers or invalid tool arguments) until its retries ran out.',
  fatal_error:
    'Something no retry can fix went wrong (a non-retryable model error, or a hook or tool policy that threw), so the run stopped.',
};

/**
 * One sentence saying why a run with this stop reason stopped; an unknown reason (a newer trace) gets a generic one.
 * @example
 * explainStopReason('max_steps') // 'The run used all the model decisions its step limit allowed ...'
 */
export function explainStopReason(reason: string): string {
  return Object.hasOwn(SENTENCES, reason)
    ? SENTENCES[reason as StopReason]
    : `The run stopped with "${reason}", a reason this version of loopstate does not know.`;
}
