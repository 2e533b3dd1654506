/**
 * Field-by-field copies of the progress record and the context, for reducers that change a few fields of them.
 * V8 builds an object literal of known fields far faster than it spreads a 14- or 18-field object, and every
 * copy made this way has one hidden class, so the guards and reducers that read them stay monomorphic. A copy
 * equals the spread of a record of exactly these fields (as the machine makes them); a field the record lacks
 * reads `undefined` either way, and is dropped the same way by `JSON.stringify`.
 */
import type { LoopContext, ProgressState } from '../machines/types.js';

export const copyProgress = (progress: ProgressState): ProgressState => ({
  lastStateDigest: progress.lastStateDigest,
  unchangedStateStreak: progress.unchangedStateStreak,
  lastEvaluatorReason: progress.lastEvaluatorReason,
  lastOutputDigest: progress.lastOutputDigest,
  sameReasonStreak: progress.sameReasonStreak,
  duplicateObservationStreak: progress.duplicateObservationStreak,
  repeatCount: progress.repeatCount,
  repeatedTool: progress.repeatedTool,
  planActive: progress.planActive,
  planStallSteps: progress.planStallSteps,
  lastParseError: progress.lastParseError,
  sameParseErrorStreak: progress.sameParseErrorStreak,
  nudgedAtStep: progress.nudgedAtStep,
  lastSignal: progress.lastSignal,
});

export const copyContext = (context: LoopContext): LoopContext => ({
  limits: context.limits,
  noProgress: context.noProgress,
  tasks: context.tasks,
  taskIndex: context.taskIndex,
  startedAt: context.startedAt,
  lastEventAt: context.lastEventAt,
  steps: context.steps,
  usage: context.usage,
  nextRequestTokens: context.nextRequestTokens,
  task: context.task,
  transport: context.transport,
  progress: context.progress,
  feedback: context.feedback,
  retryAt: context.retryAt,
  failure: context.failure,
  stop: context.stop,
  completedTasks: context.completedTasks,
  failedTasks: context.failedTasks,
});
