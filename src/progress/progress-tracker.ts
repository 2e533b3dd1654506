/**
 * Driver-side facts for no-progress detection (DESIGN §5). The statechart keeps only constant-size
 * counters, so the driver computes these incrementally: each call costs the size of its own input,
 * never the size of the run's history (nothing already seen is re-hashed or re-serialised).
 */
import { hash } from 'node:crypto';
import { z } from 'zod';
import { LoopstateError } from '../errors.js';
import { describeZodIssues } from '../zod-issues.js';

/**
 * Inputs of one state-digest update: the current task, the observations since the last update,
 * and the model's reply text (null when it only called tools).
 * @example
 * const parts: StateDigestParts = { taskIndex: 0, observations: ['{"status":"shipped"}'], reply: null };
 */
export interface StateDigestParts {
  taskIndex: number;
  observations: readonly string[];
  reply: string | null;
}

// Changelog — 1: first version.
const progressTrackerSnapshotSchema = z.object({
  schemaVersion: z.literal(1),
  /** sha1(fingerprint) → times requested; hashed so a huge argument list costs 40 bytes. */
  toolCallCounts: z.record(z.string(), z.number().int().positive()),
  /** sha1 of every distinct observation seen in the run. */
  observationHashes: z.array(z.string()),
  /** Running hash over distinct observations, in the order they were first seen. */
  distinctObservationsHash: z.string(),
  stateDigest: z.string(),
});

/**
 * The tracker's state as plain JSON, for the durable journal.
 * @example
 * const saved: ProgressTrackerSnapshot = JSON.parse(JSON.stringify(tracker.snapshot()));
 */
export type ProgressTrackerSnapshot = z.output<typeof progressTrackerSnapshotSchema>;

/** One-shot hashing: about half the cost of createHash().update().digest() per call. */
function sha1(text: string): string {
  return hash('sha1', text, 'hex');
}

/**
 * Counts repeated tool calls, recognises repeated observations and keeps a digest of the run's
 * state summary (task, distinct observations, latest reply); the driver puts these facts in the
 * events it sends to the statechart.
 * @example
 * const tracker = new ProgressTracker();
 * const repeats = tracker.countToolCall(toolCallFingerprint('get_order', { order_id: 'O-1' })); // 1
 * const seenBefore = tracker.observe('{"status":"shipped"}'); // false
 * const stateDigest = tracker.advanceState({ taskIndex: 0, observations: ['{"status":"shipped"}'], reply: null });
 */
export class ProgressTracker {
  readonly #toolCallCounts = new Map<string, number>();
  readonly #observationHashes = new Set<string>();
  #distinctObservationsHash = '';
  #stateDigest = '';
  #lastObservationHash = '';

  /** Digest of the last `advanceState` inputs; empty until the first update. */
  get stateDigest(): string {
    return this.#stateDigest;
  }

  /** How many times this fingerprint has been counted so far, without counting it again. */
  timesCounted(fingerprint: string): number {
    return this.#toolCallCounts.get(sha1(fingerprint)) ?? 0;
  }

  /**
   * Records one request of this fingerprint and returns how many times it has been requested in
   * the run, this one included. (The loop counts a call when it runs.)
   */
  countToolCall(fingerprint: string): number {
    const key = sha1(fingerprint);
    const count = (this.#toolCallCounts.get(key) ?? 0) + 1;
    this.#toolCallCounts.set(key, count);
    return count;
  }

  /**
   * Records an observation (a tool result) and returns true when the exact same content was seen
   * earlier in the run. Only a hash is kept, never the content.
   */
  observe(content: string): boolean {
    return !this.#registerObservation(content);
  }

  /** Hash of the observation passed to the last `observe`, to name it in traces without hashing twice. */
  get lastObservationHash(): string {
    return this.#lastObservationHash;
  }

  /**
   * Updates the state digest and returns it. The digest changes when a new distinct observation
   * arrived since the last update (through `observe` or `observations`), or the reply text or the
   * task differ; it stays the same when the model repeats itself and learns nothing new.
   * `observations` are registered as seen, exactly like `observe`.
   */
  advanceState(parts: StateDigestParts): string {
    for (const observation of parts.observations) this.#registerObservation(observation);
    // null (tool calls only) and '' (an empty text) are different replies.
    const replyHash = parts.reply === null ? 'no-reply' : sha1(parts.reply);
    this.#stateDigest = sha1(`${parts.taskIndex}\n${this.#distinctObservationsHash}\n${replyHash}`);
    return this.#stateDigest;
  }

  /**
   * The tracker's state as plain JSON; `ProgressTracker.restore` rebuilds an equal tracker.
   * Costs the size of the history, so take it with the occasional snapshot, not per step.
   */
  snapshot(): ProgressTrackerSnapshot {
    return {
      schemaVersion: 1,
      toolCallCounts: Object.fromEntries(this.#toolCallCounts),
      observationHashes: [...this.#observationHashes],
      distinctObservationsHash: this.#distinctObservationsHash,
      stateDigest: this.#stateDigest,
    };
  }

  /**
   * Rebuilds a tracker from `snapshot()` output (for example after reading it back from a
   * journal); throws `LoopstateError` with code `invalid_snapshot` naming the bad field.
   * @example
   * const resumed = ProgressTracker.restore(JSON.parse(savedText));
   */
  static restore(snapshot: unknown): ProgressTracker {
    const checked = progressTrackerSnapshotSchema.safeParse(snapshot);
    if (!checked.success) {
      const issues = describeZodIssues(checked.error.issues).join('; ');
      throw new LoopstateError({ code: 'invalid_snapshot', message: `Invalid progress tracker snapshot: ${issues}` });
    }
    const tracker = new ProgressTracker();
    for (const [key, count] of Object.entries(checked.data.toolCallCounts)) tracker.#toolCallCounts.set(key, count);
    for (const hash of checked.data.observationHashes) tracker.#observationHashes.add(hash);
    tracker.#distinctObservationsHash = checked.data.distinctObservationsHash;
    tracker.#stateDigest = checked.data.stateDigest;
    return tracker;
  }

  /** Returns true when the observation is new; folds it into the running hash exactly once. */
  #registerObservation(content: string): boolean {
    const hash = sha1(content);
    this.#lastObservationHash = hash;
    if (this.#observationHashes.has(hash)) return false;
    this.#observationHashes.add(hash);
    this.#distinctObservationsHash = sha1(`${this.#distinctObservationsHash}${hash}`);
    return true;
  }
}
