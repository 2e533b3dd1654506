/**
 * Driver-side facts for no-progress detection. The statechart keeps only constant-size counters,
 * so the driver computes these incrementally: each call costs the size of its own input, never the
 * size of the run's history (nothing already seen is re-hashed or re-serialised).
 *
 * An observation is a (tool, canonical arguments, result) triple: the same call bringing the same
 * result again is a repeat, while a different call that returns the same acknowledgement, or the
 * same call whose result changed (polling, re-running tests), is news. History is per task.
 */
import { z } from 'zod';
import { LoopstateError } from '../../contracts/errors.js';
import { describeZodIssues } from '../zod-issues.js';
import { digest64, legacySha1 } from './digest.js';

/**
 * Inputs of one state-digest update: the current task and the model's reply (null when it only
 * called tools; the calls' fingerprints belong in the reply text then).
 * @example
 * const parts: StateDigestParts = { taskIndex: 0, reply: 'tool_calls\nlookup:{"id":"O-1"}' };
 */
export interface StateDigestParts {
  taskIndex: number;
  reply: string | null;
}

/**
 * What observing one call's result tells: how often this exact (call, result) triple has been seen
 * in the task, this time included, and a short id naming the observation in traces.
 * @example
 * const { timesSeen } = tracker.observeCall('lookup:{"id":"O-1"}', '{"status":"shipped"}'); // 1
 */
export interface Observation {
  timesSeen: number;
  observationId: string;
}

// Changelog — 1: run-wide tool-call counts and observation hashes. 2: per-task (call, result) triples and a failure count,
// hashed with sha1. 3: hashed with digest64 (still read: a tracker restored from 2 hashes with sha1 for the rest of its run).
const progressTrackerSnapshotSchema = z.object({
  schemaVersion: z.union([z.literal(2), z.literal(3)]),
  /** digest(fingerprint, digest(result)) → times seen in the current task. */
  triples: z.record(z.string(), z.number().int().positive()),
  /** Running hash over distinct triples of the task, in the order they were first seen. */
  distinctObservationsHash: z.string(),
  /** Failed calls in the task: each one changes the digest, so retrying a failing tool is never "unchanged". */
  failures: z.number().int().min(0),
  stateDigest: z.string(),
});

/**
 * The tracker's state as plain JSON, for the durable journal.
 * @example
 * const saved: ProgressTrackerSnapshot = JSON.parse(JSON.stringify(tracker.snapshot()));
 */
export type ProgressTrackerSnapshot = z.output<typeof progressTrackerSnapshotSchema>;

/**
 * The triples of a snapshot `progressTrackerSnapshotSchema` accepts, checked without zod in the one pass that
 * puts them in a Map (they are as many as the task's observations); null when it would not accept it.
 */
function wellFormedTriples(value: unknown): Map<string, number> | null {
  if (!isWellFormedSnapshot(value)) return null;
  const { triples } = value;
  const map = new Map<string, number>();
  for (const key of Object.keys(triples)) {
    const count = triples[key];
    if (!Number.isInteger(count) || (count as number) <= 0) return null;
    map.set(key, count as number);
  }
  return map;
}

/** The fields of a snapshot `progressTrackerSnapshotSchema` accepts but its triples' counts, checked without zod. */
function isWellFormedSnapshot(value: unknown): value is ProgressTrackerSnapshot {
  if (typeof value !== 'object' || value === null || Array.isArray(value)) return false;
  const { schemaVersion, triples, distinctObservationsHash, failures, stateDigest } = value as Record<string, unknown>;
  if (
    (schemaVersion !== 2 && schemaVersion !== 3) ||
    typeof distinctObservationsHash !== 'string' ||
    typeof stateDigest !== 'string' ||
    !Number.isInteger(failures) ||
    (failures as number) < 0 ||
    typeof triples !== 'object' ||
    triples === null ||
    Array.isArray(triples)
  )
    return false;
  return true;
}

/** Each snapshot version's digest: a run keeps the one it began with, so its journalled keys and digests still match. */
const DIGESTS = { 2: legacySha1, 3: digest64 } as const;

/**
 * Counts (call, result) triples per task and keeps a digest of the task's state summary (distinct
 * observations, failures, latest reply); the driver puts these facts in the events it sends to the
 * statechart.
 * @example
 * const tracker = new ProgressTracker();
 * tracker.observeCall(toolCallFingerprint('get_order', { order_id: 'O-1' }), '{"status":"shipped"}').timesSeen; // 1
 * const stateDigest = tracker.advanceState({ taskIndex: 0, reply: null });
 */
/**
 * What changed in a tracker since the last `takeChanges()`: the triples counted again, and whether the
 * task started over first. The rest is small and given whole.
 * @example
 * const changes: ProgressTrackerChanges = { restarted: false, triples: { '3f…': 2 }, distinctObservationsHash: 'ab…', failures: 0, stateDigest: 'cd…' };
 */
export interface ProgressTrackerChanges {
  restarted: boolean;
  triples: Record<string, number>;
  distinctObservationsHash: string;
  failures: number;
  stateDigest: string;
}

/**
 * The triples' change for a durable run's chain of them (one link per snapshot): every triple of the task
 * (`whole`), or the triples counted since the previous link. `triples` is flat, key then count (`[key, count, …]`):
 * a whole link holds thousands, and JSON parses an object of thousands of keys several times slower than an array.
 * @example
 * const link: ProgressTripleChanges = { whole: false, triples: ['3f…', 2] };
 */
export interface ProgressTripleChanges {
  whole: boolean;
  triples: (string | number)[];
}

/** The tracker but its triples (they are in the chain of `ProgressTripleChanges`): what a snapshot of the run holds. */
export interface ProgressTrackerScalars {
  schemaVersion: 2 | 3;
  distinctObservationsHash: string;
  failures: number;
  stateDigest: string;
}

/** Where a chain of triple changes stands: counted since its last link, and how long it is since its last whole one. */
export interface ProgressChainState {
  /** The triples of the last whole link. */
  wholeSize: number;
  /** The triples the links after it carried, in all. */
  sinceWhole: number;
}

export class ProgressTracker {
  /** The snapshot version, which names the digest: 3 for a new run, 2 for one journalled with sha1. */
  #version: 2 | 3;
  #digest: (text: string) => string;
  #triples = new Map<string, number>();
  /** Keys counted since the last `takeChanges()`; null until `trackChanges()` (only durable runs pay for it). */
  #changed: Set<string> | null = null;
  #restarted = false;
  /** The chain of triple changes (`takeChainLink`): null until its first link, which is then whole. */
  #chain: (ProgressChainState & { changed: Set<string>; restarted: boolean }) | null = null;
  #distinctObservationsHash = '';
  #failures = 0;
  #stateDigest = '';

  /** A tracker with no history; `restore` rebuilds one from a snapshot. */
  constructor() {
    this.#version = 3;
    this.#digest = DIGESTS[3];
  }

  /**
   * The run's digest of `text`: what its fingerprints and its evaluated outputs are compared by. A run keeps
   * one for its life (a run resumed from a journal hashes as it began).
   */
  digest(text: string): string {
    return this.#digest(text);
  }

  /** The short id of an observation (a tool result's text), as the trace's `tool-end` events name it. */
  observationIdOf(result: string): string {
    return this.#digest(result).slice(0, 12);
  }

  /** Digest of the last `advanceState` inputs; empty until the first update. */
  get stateDigest(): string {
    return this.#stateDigest;
  }

  /** A new task starts with no history: what an earlier task saw is not a repeat in this one. */
  beginTask(): void {
    this.#triples = new Map();
    if (this.#changed !== null) {
      this.#changed.clear();
      this.#restarted = true;
    }
    if (this.#chain !== null) {
      this.#chain.changed.clear();
      this.#chain.restarted = true;
    }
    this.#distinctObservationsHash = '';
    this.#failures = 0;
  }

  /** Records a successful call's result; a triple seen for the first time changes the state digest. */
  observeCall(fingerprint: string, result: string): Observation {
    // The result's own hash is its id in traces (context trimming names dropped results by it).
    const resultHash = this.#digest(result);
    const key = this.#digest(`${fingerprint}\n${resultHash}`);
    const timesSeen = (this.#triples.get(key) ?? 0) + 1;
    this.#triples.set(key, timesSeen);
    this.#changed?.add(key);
    this.#chain?.changed.add(key);
    if (timesSeen === 1) this.#distinctObservationsHash = this.#digest(`${this.#distinctObservationsHash}${key}`);
    return { timesSeen, observationId: resultHash.slice(0, 12) };
  }

  /** Records a failed call (error, timeout): not an observation, but the state moved (the failure is the retry layer's). */
  noteFailure(): void {
    this.#failures += 1;
  }

  /**
   * Updates the state digest and returns it. The digest changes when a new (call, result) triple
   * or a failure arrived since the last update, or the reply or the task differ; it stays the same
   * when the model repeats itself and learns nothing new.
   */
  advanceState(parts: StateDigestParts): string {
    // One hash over fixed-size fields and the reply last; null (tool calls only) and '' (an empty text) differ.
    const reply = parts.reply === null ? 'none' : `text:${parts.reply}`;
    this.#stateDigest = this.#digest(
      `${parts.taskIndex}\n${this.#distinctObservationsHash}\n${this.#failures}\n${reply}`,
    );
    return this.#stateDigest;
  }

  /** From now on, remember what changed, for `takeChanges()`. */
  trackChanges(): void {
    this.#changed ??= new Set();
  }

  /** What changed since the last call (or `trackChanges()`): costs the size of the change, not of the task's history. */
  takeChanges(): ProgressTrackerChanges {
    const triples: Record<string, number> = {};
    for (const key of this.#changed ?? []) triples[key] = this.#triples.get(key) ?? 0;
    const changes = {
      restarted: this.#restarted,
      triples,
      distinctObservationsHash: this.#distinctObservationsHash,
      failures: this.#failures,
      stateDigest: this.#stateDigest,
    };
    this.#changed?.clear();
    this.#restarted = false;
    return changes;
  }

  /** Applies what `takeChanges()` returned on a tracker in the state it was taken from. */
  applyChanges(changes: ProgressTrackerChanges): void {
    if (changes.restarted) {
      this.#triples = new Map();
      // Tracked (a continued stop's changes are the next record's): as `beginTask` would have.
      if (this.#changed !== null) {
        this.#changed.clear();
        this.#restarted = true;
      }
      if (this.#chain !== null) {
        this.#chain.changed.clear();
        this.#chain.restarted = true;
      }
    }
    for (const [key, count] of Object.entries(changes.triples)) {
      this.#triples.set(key, count);
      this.#changed?.add(key);
      this.#chain?.changed.add(key);
    }
    this.#distinctObservationsHash = changes.distinctObservationsHash;
    this.#failures = changes.failures;
    this.#stateDigest = changes.stateDigest;
  }

  /**
   * The next link of the chain of triple changes a durable run writes with each snapshot: the triples counted
   * since the previous link, or every triple of the task — at the first link, after the task started over, and
   * once the links since the last whole one carried as many triples as it (so writing the chain costs at most
   * twice the changes, and folding it back at most twice the triples). `whole`: this one whole in any case.
   */
  takeChainLink(whole = false): ProgressTripleChanges {
    const chain = this.#chain;
    if (whole || chain === null || chain.restarted || chain.sinceWhole + chain.changed.size >= chain.wholeSize) {
      this.#chain = { changed: new Set(), restarted: false, wholeSize: this.#triples.size, sinceWhole: 0 };
      const triples: (string | number)[] = [];
      for (const [key, count] of this.#triples) triples.push(key, count);
      return { whole: true, triples };
    }
    const triples: (string | number)[] = [];
    for (const key of chain.changed) triples.push(key, this.#triples.get(key) ?? 0);
    chain.sinceWhole += chain.changed.size;
    chain.changed.clear();
    return { whole: false, triples };
  }

  /** The tracker but its triples, for a snapshot whose triples are in the chain (`takeChainLink`). */
  scalars(): ProgressTrackerScalars {
    return {
      schemaVersion: this.#version,
      distinctObservationsHash: this.#distinctObservationsHash,
      failures: this.#failures,
      stateDigest: this.#stateDigest,
    };
  }

  /**
   * Rebuilds a tracker from `scalars()` and the triples folded from the chain (its links from the last whole one
   * on), continuing the chain from where it stands.
   * @example
   * const tracker = ProgressTracker.fromChain(scalars, new Map([['3f…', 2]]), { wholeSize: 1, sinceWhole: 0 });
   */
  static fromChain(
    scalars: ProgressTrackerScalars,
    triples: Map<string, number>,
    chain: ProgressChainState,
  ): ProgressTracker {
    const tracker = new ProgressTracker();
    tracker.#version = scalars.schemaVersion;
    tracker.#digest = DIGESTS[scalars.schemaVersion];
    tracker.#triples = triples;
    tracker.#distinctObservationsHash = scalars.distinctObservationsHash;
    tracker.#failures = scalars.failures;
    tracker.#stateDigest = scalars.stateDigest;
    tracker.#chain = { changed: new Set(), restarted: false, ...chain };
    return tracker;
  }

  /**
   * The tracker's state as plain JSON; `ProgressTracker.restore` rebuilds an equal tracker.
   * Costs the size of the task's history, so take it with the occasional snapshot, not per step.
   */
  snapshot(): ProgressTrackerSnapshot {
    return {
      schemaVersion: this.#version,
      triples: Object.fromEntries(this.#triples),
      distinctObservationsHash: this.#distinctObservationsHash,
      failures: this.#failures,
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
    // Checked by hand first (a durable run's resume restores a tracker of every triple its task saw; zod
    // costs microseconds per entry); zod names the bad field of one that does not pass.
    const triples = wellFormedTriples(snapshot);
    const checked =
      triples !== null
        ? { success: true as const, data: snapshot as ProgressTrackerSnapshot }
        : progressTrackerSnapshotSchema.safeParse(snapshot);
    if (!checked.success) {
      const issues = describeZodIssues(checked.error.issues).join('; ');
      throw new LoopstateError({ code: 'invalid_snapshot', message: `Invalid progress tracker snapshot: ${issues}` });
    }
    const tracker = new ProgressTracker();
    tracker.#version = checked.data.schemaVersion;
    tracker.#digest = DIGESTS[checked.data.schemaVersion];
    tracker.#triples = triples ?? new Map(Object.entries(checked.data.triples));
    tracker.#distinctObservationsHash = checked.data.distinctObservationsHash;
    tracker.#failures = checked.data.failures;
    tracker.#stateDigest = checked.data.stateDigest;
    return tracker;
  }
}
