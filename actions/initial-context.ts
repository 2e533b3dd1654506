import type { LoopContext, LoopInput, ProgressState, TaskCounters, TransportCounters } from '../machines/types.js';

export const FRESH_TASK_COUNTERS: Readonly<TaskCounters> = Object.freeze({
  steps: 0,
  reflectionRetries: 0,
  argumentRepairs: 0,
});

export const FRESH_TRANSPORT: Readonly<TransportCounters> = Object.freeze({ consecutiveFailures: 0, retries: 0 });

export const FRESH_PROGRESS: Readonly<ProgressState> = Object.freeze({
  lastStateDigest: null,
  unchangedStateStreak: 0,
  lastEvaluatorReason: null,
  lastOutputDigest: null,
  sameReasonStreak: 0,
  duplicateObservationStreak: 0,
  repeatCount: 0,
  repeatedTool: null,
  planActive: false,
  planStallSteps: 0,
  lastParseError: null,
  sameParseErrorStreak: 0,
  nudgedAtStep: null,
  lastSignal: null,
});

export function createInitialContext({ input }: { input: LoopInput }): LoopContext {
  return {
    limits: input.limits,
    noProgress: input.noProgress,
    tasks: input.tasks,
    taskIndex: 0,
    startedAt: null,
    lastEventAt: 0,
    steps: 0,
    usage: { inputTokens: 0, outputTokens: 0, costUsd: 0, modelCalls: 0, toolCalls: 0 },
    nextRequestTokens: 0,
    task: FRESH_TASK_COUNTERS,
    transport: FRESH_TRANSPORT,
    progress: FRESH_PROGRESS,
    feedback: null,
    retryAt: null,
    failure: null,
    stop: null,
    completedTasks: 0,
    failedTasks: 0,
  };
}
