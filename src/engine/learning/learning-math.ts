/**
 * The learning rules, as pure functions of a record, a batch and the time (the loop's clock, passed in):
 * counts fade by half every `halfLifeMs`, weights and pass rates fade back towards 1 (an old failure
 * is forgiven), a batch's counts add to the record's (so concurrent writers' batches add up), and a
 * batch moves a weight by at most `learningRate` of the way to the batch's own success rate.
 */
import type { LearnedTask, LearnedTool, LearningRecord } from './learning-record.js';

/**
 * The learning options with their defaults filled in.
 * @example
 * const rules: LearningRules = { learningRate: 0.2, halfLifeMs: 86_400_000, topReasons: 3 };
 */
export interface LearningRules {
  learningRate: number;
  halfLifeMs: number;
  topReasons: number;
}

/** One tool's outcomes in a batch. */
export interface ToolBatch {
  successes: number;
  failures: number;
  totalLatencyMs: number;
  /** Failures since the batch's last success (all of them when it had none). */
  trailingFailures: number;
  sawSuccess: boolean;
  lastFailureAt: number;
}

/** One task's evaluations in a batch. */
export interface TaskBatch {
  passes: number;
  failures: number;
  reasons: Record<string, number>;
}

/** Outcomes seen since the last write, by tool and by task. */
export interface LearningBatch {
  tools: Map<string, ToolBatch>;
  tasks: Map<string, TaskBatch>;
}

/** Adds `later`'s outcomes to `into` (outcomes seen after `into`'s): as if they had been one batch. */
export function addBatch(into: LearningBatch, later: LearningBatch): void {
  for (const [name, tool] of later.tools) {
    const before = into.tools.get(name);
    if (before === undefined) {
      into.tools.set(name, { ...tool });
      continue;
    }
    before.successes += tool.successes;
    before.failures += tool.failures;
    before.totalLatencyMs += tool.totalLatencyMs;
    // A success in the later outcomes ends the earlier streak; without one, the streak goes on.
    before.trailingFailures = tool.sawSuccess ? tool.trailingFailures : before.trailingFailures + tool.trailingFailures;
    before.sawSuccess ||= tool.sawSuccess;
    if (tool.failures > 0) before.lastFailureAt = tool.lastFailureAt;
  }
  for (const [id, task] of later.tasks) {
    const before = into.tasks.get(id);
    if (before === undefined) {
      into.tasks.set(id, {
        ...task,
        reasons: Object.assign(Object.create(null) as Record<string, number>, task.reasons),
      });
      continue;
    }
    before.passes += task.passes;
    before.failures += task.failures;
    for (const [reason, count] of Object.entries(task.reasons))
      before.reasons[reason] = (Object.hasOwn(before.reasons, reason) ? (before.reasons[reason] ?? 0) : 0) + count;
  }
}

/** Reasons whose decayed count fell below this are forgotten, so a record does not grow for good. */
const FORGOTTEN_BELOW = 0.01;
/** Reasons kept per task in the store (the feedback shows `topReasons` of them). */
const STORED_REASONS = 20;

/** How much of an old count is left after `elapsedMs`: 1/2 per half-life; 1 for no time or no half-life. */
export function decayFactor(elapsedMs: number, halfLifeMs: number): number {
  if (!(elapsedMs > 0) || !Number.isFinite(halfLifeMs)) return 1;
  return 0.5 ** (elapsedMs / halfLifeMs);
}

/** Towards 1 by the fading share: what was learned from failures fades as the counts do. */
const fadeTowardsOne = (value: number, factor: number) => 1 - (1 - value) * factor;

const own = <Value>(): Record<string, Value> => Object.create(null) as Record<string, Value>;

function keptReasons(reasons: Readonly<Record<string, number>>, factor: number): Record<string, number> {
  const entries = Object.entries(reasons)
    .map(([reason, count]): [string, number] => [reason, count * factor])
    .filter(([, count]) => count >= FORGOTTEN_BELOW)
    .sort(([leftReason, left], [rightReason, right]) => right - left || (leftReason < rightReason ? -1 : 1))
    .slice(0, STORED_REASONS);
  return Object.assign(own<number>(), Object.fromEntries(entries));
}

/** The record as of `now`: counts faded, weights and pass rates faded towards 1. A clock that went back fades nothing. */
export function decayedRecord(record: LearningRecord, now: number, halfLifeMs: number): LearningRecord {
  const factor = decayFactor(now - record.updatedAt, halfLifeMs);
  const tools = own<LearnedTool>();
  for (const [name, tool] of Object.entries(record.tools))
    tools[name] = {
      ...tool,
      successes: tool.successes * factor,
      failures: tool.failures * factor,
      totalLatencyMs: tool.totalLatencyMs * factor,
      weight: fadeTowardsOne(tool.weight, factor),
    };
  const tasks = own<LearnedTask>();
  for (const [id, task] of Object.entries(record.tasks))
    tasks[id] = {
      passes: task.passes * factor,
      failures: task.failures * factor,
      passRate: fadeTowardsOne(task.passRate, factor),
      reasons: keptReasons(task.reasons, factor),
    };
  return { ...record, updatedAt: Math.max(record.updatedAt, now), tools, tasks };
}

/** A moving average step: `rate` of the way from `current` to `observed`. */
const towards = (current: number, observed: number, rate: number) => current + rate * (observed - current);

/**
 * The record with a batch merged in at `now`: decayed first, then the batch's counts added and each
 * weight moved towards the batch's success rate by `learningRate`.
 */
export function mergeBatch(
  record: LearningRecord,
  batch: LearningBatch,
  now: number,
  rules: LearningRules,
): LearningRecord {
  const merged = decayedRecord(record, now, rules.halfLifeMs);
  for (const [name, outcome] of batch.tools) {
    const calls = outcome.successes + outcome.failures;
    if (calls === 0) continue;
    const before: LearnedTool = merged.tools[name] ?? {
      successes: 0,
      failures: 0,
      totalLatencyMs: 0,
      weight: 1,
      consecutiveFailures: 0,
      lastFailureAt: 0,
    };
    merged.tools[name] = {
      successes: before.successes + outcome.successes,
      failures: before.failures + outcome.failures,
      totalLatencyMs: before.totalLatencyMs + outcome.totalLatencyMs,
      weight: towards(before.weight, outcome.successes / calls, rules.learningRate),
      // A success in the batch ended the stored streak; a batch of failures only continues it.
      consecutiveFailures: outcome.sawSuccess
        ? outcome.trailingFailures
        : before.consecutiveFailures + outcome.trailingFailures,
      lastFailureAt: Math.max(before.lastFailureAt, outcome.lastFailureAt),
    };
  }
  for (const [id, outcome] of batch.tasks) {
    const evaluations = outcome.passes + outcome.failures;
    if (evaluations === 0) continue;
    const before: LearnedTask = merged.tasks[id] ?? { passes: 0, failures: 0, passRate: 1, reasons: own<number>() };
    const reasons = Object.assign(own<number>(), before.reasons);
    for (const [reason, count] of Object.entries(outcome.reasons)) reasons[reason] = (reasons[reason] ?? 0) + count;
    merged.tasks[id] = {
      passes: before.passes + outcome.passes,
      failures: before.failures + outcome.failures,
      passRate: towards(before.passRate, outcome.passes / evaluations, rules.learningRate),
      reasons: keptReasons(reasons, 1),
    };
  }
  return merged;
}

/**
 * What a task's prompt function is told about the task's past evaluations (`prompt({ goal, feedback })`).
 * @example
 * const prompt = ({ goal, feedback }: TaskPromptContext) =>
 *   feedback && feedback.passRate < 0.8 ? `${goal}\nOften wrong before: ${feedback.topFailureReasons.map((r) => r.reason).join('; ')}` : goal;
 */
export interface TaskFeedback {
  /** A moving average of the pass rate across runs, in [0, 1] (1 when the task never failed). */
  passRate: number;
  /** Evaluations behind it, decayed (older ones count less). */
  evaluations: number;
  /** The most frequent failure reasons, most frequent first, with their decayed counts. */
  topFailureReasons: { reason: string; count: number }[];
}

/** The feedback of a learned task. */
export function taskFeedbackOf(task: LearnedTask, topReasons: number): TaskFeedback {
  return {
    passRate: task.passRate,
    evaluations: task.passes + task.failures,
    topFailureReasons: Object.entries(task.reasons)
      .sort(([leftReason, left], [rightReason, right]) => right - left || (leftReason < rightReason ? -1 : 1))
      .slice(0, topReasons)
      .map(([reason, count]) => ({ reason, count })),
  };
}
