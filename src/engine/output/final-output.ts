/**
 * What a run reports as its output: the evaluated value when it completed; otherwise what the
 * format evaluators made of the last reply (never the raw text passed off as parsed), plus that
 * text as `rawOutput` either way.
 */

/**
 * The last evaluation of the current task: which reply it judged and what the format layer
 * parsed from it (null when a format evaluator failed or did not run).
 * @example
 * const evaluation: LastEvaluation = { taskIndex: 0, reply: '{"total":0}', formatted: { value: { total: 0 } } };
 */
export interface LastEvaluation {
  taskIndex: number;
  reply: string;
  formatted: { value: unknown } | null;
  /** Set when an evaluator asked a person to review the reply: what the evaluators parsed, who asked and why. */
  review?: ReviewRequest;
}

/** An evaluator's request for a person's review of the reply, as the session keeps it. */
export interface ReviewRequest {
  output: unknown;
  evaluator: string;
  reason: string;
  outputHash: string;
}

/**
 * The facts `finalOutput` chooses from.
 * @example
 * const facts: FinalOutputFacts = { completed: false, evaluated: undefined, lastReply: 'Checking.', lastReplyIsCurrent: true, taskIndex: 0, lastEvaluation: null };
 */
export interface FinalOutputFacts {
  completed: boolean;
  /** The last task's evaluated output, when it passed. */
  evaluated: unknown;
  lastReply: string | null;
  /** False when the machine moved on to a task the driver never started: that task has no reply yet (unused when completed). */
  lastReplyIsCurrent: boolean;
  taskIndex: number;
  lastEvaluation: LastEvaluation | null;
}

/**
 * Chooses `output` and `rawOutput`. A run that did not complete keeps the format layer's parse of
 * its last reply when that very reply was evaluated and parsed, even if a later rule failed; else
 * `output` is null. `rawOutput` is the last reply's text (null when there is none).
 * @example
 * finalOutput({ completed: false, evaluated: undefined, lastReply: 'Checking.', lastReplyIsCurrent: true, taskIndex: 0, lastEvaluation: null })
 * // { output: null, rawOutput: 'Checking.' }
 */
export function finalOutput(facts: FinalOutputFacts): { output: unknown; rawOutput: string | null } {
  const evaluation = facts.lastEvaluation;
  // A completed run's last evaluation passed the last task: its reply is what the output came from.
  if (facts.completed) return { output: facts.evaluated ?? null, rawOutput: evaluation?.reply ?? facts.lastReply };
  const rawOutput = facts.lastReplyIsCurrent ? facts.lastReply : null;
  const parsedReply =
    rawOutput !== null &&
    evaluation !== null &&
    evaluation.taskIndex === facts.taskIndex &&
    evaluation.reply === rawOutput
      ? evaluation.formatted
      : null;
  return { output: parsedReply?.value ?? null, rawOutput };
}
