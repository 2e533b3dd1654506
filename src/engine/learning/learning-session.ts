/**
 * One run's side of learning: reads what the loop learned when the run starts (its tool health starts
 * from it, its task prompts see the feedback), collects the run's tool outcomes and evaluations, and
 * merges them into the store in batches by compare-and-set, so concurrent runs' batches add up. A
 * record that cannot be read or written costs the run a warning, never its result.
 */
import type { Store } from '../../contracts/store.js';
import type { Clock } from '../runtime/clock.js';
import { describeThrown } from '../redaction/describe-thrown.js';
import { safeNow } from '../hooks/guarded-clock.js';
import { ToolHealth } from '../tools/index.js';
import type { TraceEvent } from '../trace/trace-event.js';
import {
  addBatch,
  decayedRecord,
  mergeBatch,
  taskFeedbackOf,
  type LearningBatch,
  type TaskFeedback,
  type ToolBatch,
} from './learning-math.js';
import type { ResolvedLearning } from './learning-options.js';
import {
  decodeLearningRecord,
  emptyLearningRecord,
  encodeLearningRecord,
  learningKey,
  LearningRecordError,
  type LearningRecord,
} from './learning-record.js';

/** Compare-and-set attempts before a batch is given up (with a warning) under heavy contention. */
const MAX_ATTEMPTS = 50;
/** A failure reason is kept by its first characters: long reasons quoting the output would never repeat. */
const REASON_CHARS = 200;

/** Where the session reports: the run's trace and warnings. */
export interface LearningSink {
  readonly runId: string;
  record(event: TraceEvent): void;
  warn(message: string, at: number): void;
}

/** Tool health that also hands every outcome to the learning session. */
class LearningToolHealth extends ToolHealth {
  readonly #onOutcome: (name: string, succeeded: boolean, latencyMs: number) => void;
  constructor(now: () => number, onOutcome: (name: string, succeeded: boolean, latencyMs: number) => void) {
    super({ now });
    this.#onOutcome = onOutcome;
  }
  override recordSuccess(name: string, latencyMs: number): void {
    super.recordSuccess(name, latencyMs);
    this.#onOutcome(name, true, latencyMs);
  }
  override recordFailure(name: string, latencyMs: number): void {
    super.recordFailure(name, latencyMs);
    this.#onOutcome(name, false, latencyMs);
  }
}

const emptyBatch = (): LearningBatch => ({ tools: new Map(), tasks: new Map() });

export class LearningSession {
  readonly key: string;
  readonly health: ToolHealth;
  readonly #options: ResolvedLearning;
  readonly #store: Store;
  readonly #clock: Clock;
  readonly #name: string;
  readonly #tenantId: string | null;
  #loaded: LearningRecord | null = null;
  #version: number | null = null;
  #problem: string | null = null;
  /** A stored record this loopstate cannot read: nothing is written over it. */
  #unwritable = false;
  /** Outcomes whose events the run's journal may not have committed yet: a crash would have a resume perform them again. */
  #batch = emptyBatch();
  #pending = 0;
  /** Outcomes whose events are committed (see `seal`): the next write takes these only. */
  #sealed = emptyBatch();
  #sealedCount = 0;
  #windowStart: number;

  constructor(options: ResolvedLearning, store: Store, name: string, tenantId: string | null, clock: Clock) {
    this.#options = options;
    this.#store = store;
    this.#clock = clock;
    this.#name = name;
    this.#tenantId = tenantId;
    this.key = learningKey(name, tenantId);
    this.#windowStart = safeNow(clock);
    this.health = new LearningToolHealth(
      () => clock.now(),
      (tool, succeeded, latencyMs) => this.#noteTool(tool, succeeded, latencyMs),
    );
  }

  /** Reads the record and seeds the tool health from it; a bad record or a store error is kept as the problem to report. */
  async load(): Promise<void> {
    const now = safeNow(this.#clock);
    try {
      const row = await this.#store.readLearning(this.key);
      if (row === null) return;
      this.#loaded = decayedRecord(decodeLearningRecord(row.body, this.key), now, this.#options.halfLifeMs);
      this.#version = row.version;
    } catch (error) {
      this.#problem = describeThrown(error);
      this.#unwritable = error instanceof LearningRecordError;
      return;
    }
    this.health.restoreLearned(
      Object.fromEntries(
        Object.entries(this.#loaded.tools).map(([tool, learned]) => [
          tool,
          {
            weight: learned.weight,
            consecutiveFailures: learned.consecutiveFailures,
            lastFailureAt: learned.lastFailureAt,
          },
        ]),
      ),
    );
  }

  /** Records `learning-loaded` (and a warning when the stored record was not used). */
  traceLoaded(sink: LearningSink, at: number): void {
    const record = this.#loaded;
    sink.record({
      type: 'learning-loaded',
      runId: sink.runId,
      at,
      key: this.key,
      version: this.#version,
      tools: record
        ? Object.entries(record.tools).map(([name, tool]) => ({
            name,
            weight: tool.weight,
            successes: tool.successes,
            failures: tool.failures,
            consecutiveFailures: tool.consecutiveFailures,
          }))
        : [],
      tasks: record
        ? Object.entries(record.tasks).map(([id, task]) => ({ id, ...taskFeedbackOf(task, this.#options.topReasons) }))
        : [],
      ...(this.#problem === null ? {} : { problem: this.#problem }),
    });
    if (this.#problem !== null)
      sink.warn(
        `learning: the run starts from nothing learned (${this.#problem})${this.#unwritable ? '; the record is left as it is, and nothing is learned into it until it is cleared (loopstate learning reset)' : ''}`,
        at,
      );
  }

  /** What the task's prompt function is told; every task has feedback while learning is on (none learned: pass rate 1). */
  feedbackFor(taskId: string): TaskFeedback {
    const task = this.#loaded?.tasks[taskId];
    return task === undefined
      ? { passRate: 1, evaluations: 0, topFailureReasons: [] }
      : taskFeedbackOf(task, this.#options.topReasons);
  }

  /** An evaluator's verdict on the task's output. */
  noteEvaluation(taskId: string, passed: boolean, reason: string): void {
    let task = this.#batch.tasks.get(taskId);
    if (task === undefined)
      this.#batch.tasks.set(
        taskId,
        (task = { passes: 0, failures: 0, reasons: Object.create(null) as Record<string, number> }),
      );
    if (passed) task.passes += 1;
    else {
      task.failures += 1;
      const key = reason.slice(0, REASON_CHARS);
      task.reasons[key] = (Object.hasOwn(task.reasons, key) ? (task.reasons[key] ?? 0) : 0) + 1;
    }
    this.#pending += 1;
  }

  #noteTool(name: string, succeeded: boolean, latencyMs: number): void {
    let tool: ToolBatch | undefined = this.#batch.tools.get(name);
    if (tool === undefined)
      this.#batch.tools.set(
        name,
        (tool = {
          successes: 0,
          failures: 0,
          totalLatencyMs: 0,
          trailingFailures: 0,
          sawSuccess: false,
          lastFailureAt: 0,
        }),
      );
    tool.totalLatencyMs += Number.isFinite(latencyMs) && latencyMs > 0 ? latencyMs : 0;
    if (succeeded) {
      tool.successes += 1;
      tool.sawSuccess = true;
      tool.trailingFailures = 0;
    } else {
      tool.failures += 1;
      tool.trailingFailures += 1;
      tool.lastFailureAt = safeNow(this.#clock);
    }
    this.#pending += 1;
  }

  /**
   * The outcomes seen so far came from events the run has committed (a durable run's journal, or a run
   * without one): they may be written. Until then a write leaves them out, so a crash between the write and
   * the journal's commit cannot count them twice (a resume performs the uncommitted effects again).
   */
  seal(): void {
    if (this.#pending === 0) return;
    addBatch(this.#sealed, this.#batch);
    this.#sealedCount += this.#pending;
    this.#batch = emptyBatch();
    this.#pending = 0;
  }

  /** Whether the batch window is full: `batchWindow.outcomes` sealed outcomes, or `batchWindow.ms` since the last write. */
  due(now: number): boolean {
    return (
      this.#sealedCount > 0 &&
      (this.#sealedCount >= this.#options.batchOutcomes || now - this.#windowStart >= this.#options.batchMs)
    );
  }

  /** Merges the sealed batch into the store (compare-and-set, read again on a lost race) and records `learning-saved`. */
  async flush(sink: LearningSink): Promise<void> {
    if (this.#sealedCount === 0) return;
    const batch = this.#sealed;
    const outcomes = this.#sealedCount;
    this.#sealed = emptyBatch();
    this.#sealedCount = 0;
    const now = safeNow(this.#clock);
    this.#windowStart = now;
    if (this.#unwritable) return;
    try {
      for (let attempt = 0; attempt < MAX_ATTEMPTS; attempt++) {
        const row = await this.#store.readLearning(this.key);
        const stored =
          row === null
            ? emptyLearningRecord(this.#name, this.#tenantId, now)
            : decodeLearningRecord(row.body, this.key);
        const before = decayedRecord(stored, now, this.#options.halfLifeMs);
        const after = mergeBatch(stored, batch, now, this.#options);
        if (!(await this.#store.writeLearning(this.key, encodeLearningRecord(after), row?.version ?? null))) continue;
        sink.record(savedEvent(sink.runId, now, this.key, (row?.version ?? 0) + 1, outcomes, batch, before, after));
        return;
      }
      sink.warn(
        `learning: a batch of ${outcomes} outcomes was not saved to ${this.key}: the record kept changing under ${MAX_ATTEMPTS} attempts`,
        now,
      );
    } catch (error) {
      sink.warn(
        `learning: a batch of ${outcomes} outcomes was not saved to ${this.key}: ${describeThrown(error)}`,
        now,
      );
    }
  }
}

function savedEvent(
  runId: string,
  at: number,
  key: string,
  version: number,
  outcomes: number,
  batch: LearningBatch,
  before: LearningRecord,
  after: LearningRecord,
): TraceEvent {
  return {
    type: 'learning-saved',
    runId,
    at,
    key,
    version,
    outcomes,
    tools: [...batch.tools].map(([name, tool]) => ({
      name,
      successes: tool.successes,
      failures: tool.failures,
      weightBefore: before.tools[name]?.weight ?? 1,
      weightAfter: after.tools[name]?.weight ?? 1,
    })),
    tasks: [...batch.tasks].map(([id, task]) => ({
      id,
      passes: task.passes,
      failures: task.failures,
      passRateBefore: before.tasks[id]?.passRate ?? 1,
      passRateAfter: after.tasks[id]?.passRate ?? 1,
    })),
  };
}
