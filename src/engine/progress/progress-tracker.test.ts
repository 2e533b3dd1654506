import { hash } from 'node:crypto';
import { describe, expect, it, vi } from 'vitest';
import { LoopstateError } from '../../contracts/errors.js';
import type * as Digest from './digest.js';
import { ProgressTracker } from './progress-tracker.js';
import { toolCallFingerprint } from './tool-call-fingerprint.js';

// Counts the bytes the tracker hashes, so the tests can show per-step work does not grow with history.
const hashing = vi.hoisted(() => ({ bytes: 0 }));
vi.mock('./digest.js', async (importOriginal) => {
  const actual = await importOriginal<typeof Digest>();
  return {
    ...actual,
    digest64(text: string) {
      hashing.bytes += text.length;
      return actual.digest64(text);
    },
  };
});

function bytesHashedBy(action: () => void): number {
  const before = hashing.bytes;
  action();
  return hashing.bytes - before;
}

/** The error `action` throws; fails the test when it throws nothing. */
function thrownBy(action: () => unknown): unknown {
  try {
    action();
  } catch (caught) {
    return caught;
  }
  throw new Error('expected the action to throw');
}

const lookup = (id: number) => toolCallFingerprint('lookup', { id });

describe('ProgressTracker.observeCall', () => {
  it('counts the same call bringing the same result up, this time included', () => {
    const tracker = new ProgressTracker();
    expect(tracker.observeCall(lookup(1), '{"status":"pending"}').timesSeen).toBe(1);
    expect(tracker.observeCall(lookup(1), '{"status":"pending"}').timesSeen).toBe(2);
    expect(tracker.observeCall(toolCallFingerprint('lookup', { id: 1 }), '{"status":"pending"}').timesSeen).toBe(3);
  });

  it('treats the same call with a changed result as new (polling, re-running tests)', () => {
    const tracker = new ProgressTracker();
    expect(tracker.observeCall(lookup(1), '{"status":"pending"}').timesSeen).toBe(1);
    expect(tracker.observeCall(lookup(1), '{"status":"shipped"}').timesSeen).toBe(1);
    // The earlier result is still remembered: seeing it again is a repeat.
    expect(tracker.observeCall(lookup(1), '{"status":"pending"}').timesSeen).toBe(2);
    expect(tracker.observeCall(lookup(1), '{"status":"pending"} ').timesSeen).toBe(1);
  });

  it('treats a different call bringing the same acknowledgement as new', () => {
    const tracker = new ProgressTracker();
    expect(tracker.observeCall(toolCallFingerprint('write_file', { path: 'a.txt' }), 'ok').timesSeen).toBe(1);
    expect(tracker.observeCall(toolCallFingerprint('write_file', { path: 'b.txt' }), 'ok').timesSeen).toBe(1);
    expect(tracker.observeCall(toolCallFingerprint('delete_file', { path: 'a.txt' }), 'ok').timesSeen).toBe(1);
  });

  it('names the observation by its result: a 12-character id, the same for the same result', () => {
    const tracker = new ProgressTracker();
    const first = tracker.observeCall(lookup(1), 'shipped');
    expect(first.observationId).toMatch(/^[0-9a-f]{12}$/);
    expect(tracker.observeCall(lookup(2), 'shipped').observationId).toBe(first.observationId);
    expect(tracker.observeCall(lookup(1), 'pending').observationId).not.toBe(first.observationId);
  });

  it('keeps hashes, never the content', () => {
    const tracker = new ProgressTracker();
    tracker.observeCall('lookup:{"email":"ada@example.com"}', 'secret customer address');
    const saved = JSON.stringify(tracker.snapshot());
    expect(saved).not.toContain('secret');
    expect(saved).not.toContain('ada@example.com');
  });
});

describe('ProgressTracker.beginTask', () => {
  it('starts each task with no history: what an earlier task saw is not a repeat', () => {
    const tracker = new ProgressTracker();
    tracker.observeCall(lookup(1), 'shipped');
    expect(tracker.observeCall(lookup(1), 'shipped').timesSeen).toBe(2);
    tracker.beginTask();
    expect(tracker.observeCall(lookup(1), 'shipped').timesSeen).toBe(1);
  });

  it('clears the observations and failures, so the next task digest does not depend on the last task', () => {
    const fresh = new ProgressTracker();
    fresh.beginTask();
    const reused = new ProgressTracker();
    reused.observeCall(lookup(1), 'shipped');
    reused.noteFailure();
    reused.advanceState({ taskIndex: 0, reply: 'done' });
    reused.beginTask();
    expect(reused.advanceState({ taskIndex: 1, reply: 'start' })).toBe(
      fresh.advanceState({ taskIndex: 1, reply: 'start' }),
    );
  });
});

describe('ProgressTracker.advanceState', () => {
  const advance = (tracker: ProgressTracker, reply: string | null, taskIndex = 0) =>
    tracker.advanceState({ taskIndex, reply });

  it('starts empty and returns the new digest, also readable as stateDigest', () => {
    const tracker = new ProgressTracker();
    expect(tracker.stateDigest).toBe('');
    const digest = advance(tracker, 'hello');
    expect(digest).toMatch(/^[0-9a-f]{16}$/);
    expect(tracker.stateDigest).toBe(digest);
  });

  it('stays the same when the model repeats itself and learns nothing new', () => {
    const tracker = new ProgressTracker();
    tracker.observeCall(lookup(1), 'shipped');
    const first = advance(tracker, null);
    expect(advance(tracker, null)).toBe(first);
    tracker.observeCall(lookup(1), 'shipped');
    expect(advance(tracker, null)).toBe(first);
  });

  it('changes when a new (call, result) triple arrives, whether the call or the result is new', () => {
    const tracker = new ProgressTracker();
    tracker.observeCall(lookup(1), 'pending');
    const first = advance(tracker, null);
    tracker.observeCall(lookup(1), 'shipped');
    const changedResult = advance(tracker, null);
    expect(changedResult).not.toBe(first);
    tracker.observeCall(lookup(2), 'shipped');
    expect(advance(tracker, null)).not.toBe(changedResult);
  });

  it('changes with each failure, so retrying a failing tool is never an unchanged state', () => {
    const tracker = new ProgressTracker();
    const before = advance(tracker, null);
    tracker.noteFailure();
    const once = advance(tracker, null);
    expect(once).not.toBe(before);
    tracker.noteFailure();
    expect(advance(tracker, null)).not.toBe(once);
  });

  it('changes when the reply differs, and tells a null reply from an empty one', () => {
    const tracker = new ProgressTracker();
    const a = advance(tracker, 'draft A');
    const b = advance(tracker, 'draft B');
    const none = advance(tracker, null);
    const empty = advance(tracker, '');
    expect(new Set([a, b, none, empty]).size).toBe(4);
    expect(advance(tracker, 'draft A')).toBe(a);
  });

  it('changes when the task differs', () => {
    const tracker = new ProgressTracker();
    const taskZero = advance(tracker, 'same', 0);
    expect(advance(tracker, 'same', 1)).not.toBe(taskZero);
  });

  it('is deterministic: two trackers fed the same inputs agree', () => {
    const feed = (tracker: ProgressTracker) => {
      tracker.observeCall(lookup(1), 'a');
      const first = advance(tracker, null);
      tracker.noteFailure();
      return [first, advance(tracker, 'done', 1)];
    };
    expect(feed(new ProgressTracker())).toEqual(feed(new ProgressTracker()));
  });
});

describe('ProgressTracker cost', () => {
  it('hashes only the new step, however long the history is', () => {
    const tracker = new ProgressTracker();
    const step = (index: number) => () => {
      tracker.observeCall(toolCallFingerprint('lookup', { page: index % 1_000_000 }), `result ${index % 1_000_000}`);
      tracker.advanceState({ taskIndex: 0, reply: `reply ${index % 1_000_000}` });
    };
    // Indexes with the same digit count, so the inputs of both measured steps have the same size;
    // one step first, because the very first observation folds into an empty running hash.
    step(100_000)();
    const early = bytesHashedBy(step(100_001));
    for (let index = 100_002; index < 105_000; index += 1) step(index)();
    const late = bytesHashedBy(step(105_000));
    expect(early).toBeGreaterThan(0);
    expect(late).toBe(early);
  });
});

describe('ProgressTracker snapshot and restore', () => {
  it('round-trips through JSON: counts, failures and digests carry on identically', () => {
    const original = new ProgressTracker();
    original.observeCall(lookup(1), 'a');
    original.observeCall(lookup(1), 'a');
    original.observeCall(lookup(2), 'b');
    original.noteFailure();
    original.advanceState({ taskIndex: 0, reply: null });
    const restored = ProgressTracker.restore(JSON.parse(JSON.stringify(original.snapshot())));
    expect(restored.snapshot()).toEqual(original.snapshot());
    expect(restored.stateDigest).toBe(original.stateDigest);
    expect(restored.observeCall(lookup(1), 'a').timesSeen).toBe(3);
    expect(original.observeCall(lookup(1), 'a').timesSeen).toBe(3);
    restored.noteFailure();
    original.noteFailure();
    expect(restored.advanceState({ taskIndex: 0, reply: 'x' })).toBe(
      original.advanceState({ taskIndex: 0, reply: 'x' }),
    );
  });

  it('is versioned plain data (version 3: digest64)', () => {
    expect(new ProgressTracker().snapshot()).toEqual({
      schemaVersion: 3,
      triples: {},
      distinctObservationsHash: '',
      failures: 0,
      stateDigest: '',
    });
  });

  it('keeps hashing with sha1 when restored from a version-2 snapshot, so its journalled triples still match', () => {
    const sha1 = (text: string) => hash('sha1', text, 'hex');
    const fingerprint = lookup(1);
    // What a version-2 tracker wrote after seeing the call once: its key is sha1(fingerprint, sha1(result)).
    const key = sha1(`${fingerprint}\n${sha1('a')}`);
    const legacy = ProgressTracker.restore({
      schemaVersion: 2,
      triples: { [key]: 1 },
      distinctObservationsHash: sha1(key),
      failures: 0,
      stateDigest: '',
    });
    expect(legacy.observeCall(fingerprint, 'a')).toEqual({ timesSeen: 2, observationId: sha1('a').slice(0, 12) });
    expect(legacy.digest('output')).toBe(sha1('output'));
    expect(legacy.snapshot().schemaVersion).toBe(2);
    expect(ProgressTracker.restore(legacy.snapshot()).observeCall(fingerprint, 'a').timesSeen).toBe(3);
    // The same snapshot read as version 3 would lose the count: the digest is what the version names.
    expect(
      ProgressTracker.restore({ ...legacy.snapshot(), schemaVersion: 3 }).observeCall(fingerprint, 'a').timesSeen,
    ).toBe(1);
  });

  it('refuses a version-1 snapshot: its run-wide counts cannot become per-task triples', () => {
    const versionOne = {
      schemaVersion: 1,
      toolCallCounts: { abc: 2 },
      observationHashes: ['def'],
      distinctObservationsHash: 'ghi',
      stateDigest: 'jkl',
    };
    const error = thrownBy(() => ProgressTracker.restore(versionOne));
    expect(error).toBeInstanceOf(LoopstateError);
    expect(error).toMatchObject({ code: 'invalid_snapshot', message: expect.stringContaining('schemaVersion') });
  });

  it('refuses a malformed snapshot with code invalid_snapshot, naming the bad field', () => {
    const valid = new ProgressTracker().snapshot();
    expect(thrownBy(() => ProgressTracker.restore({ ...valid, triples: { abc: 0 } }))).toMatchObject({
      code: 'invalid_snapshot',
      message: expect.stringMatching(/triples\.abc: Too small/),
    });
    // A bad count after many good ones (the triples are checked in the pass that restores them).
    const many = Object.fromEntries(Array.from({ length: 100 }, (_, index) => [`k${index}`, 1 + (index % 3)]));
    expect(ProgressTracker.restore({ ...valid, triples: many }).snapshot().triples).toEqual(many);
    expect(thrownBy(() => ProgressTracker.restore({ ...valid, triples: { ...many, last: 1.5 } }))).toMatchObject({
      code: 'invalid_snapshot',
      message: expect.stringContaining('triples.last'),
    });
    expect(thrownBy(() => ProgressTracker.restore({ ...valid, failures: -1 }))).toMatchObject({
      code: 'invalid_snapshot',
      message: expect.stringContaining('failures'),
    });
    const { failures: _failures, ...withoutFailures } = valid;
    expect(thrownBy(() => ProgressTracker.restore(withoutFailures))).toMatchObject({
      code: 'invalid_snapshot',
      message: expect.stringContaining('failures'),
    });
    expect(thrownBy(() => ProgressTracker.restore(null))).toMatchObject({
      code: 'invalid_snapshot',
      message: expect.stringMatching(/Invalid progress tracker snapshot: \(root\)/),
    });
  });
});

describe('ProgressTracker.takeChainLink', () => {
  /** Folds links as a resume does: from the last whole one on. */
  const fold = (links: { whole: boolean; triples: (string | number)[] }[]) => {
    const from = links.map((link) => link.whole).lastIndexOf(true);
    const triples = new Map<string, number>();
    for (const link of links.slice(from))
      for (let at = 0; at < link.triples.length; at += 2)
        triples.set(link.triples[at] as string, link.triples[at + 1] as number);
    return Object.fromEntries(triples);
  };

  it('links the triples counted since the previous link; whole at first, and when the changes reach the last whole size', () => {
    const tracker = new ProgressTracker();
    for (let call = 0; call < 4; call++) tracker.observeCall(`lookup:${call}`, 'r');
    const links = [tracker.takeChainLink()];
    expect(links[0]).toMatchObject({ whole: true });
    // Flat: key, count, key, count.
    expect(links[0]!.triples).toHaveLength(8);
    expect(links[0]!.triples.filter((_, at) => at % 2 === 1)).toEqual([1, 1, 1, 1]);
    tracker.observeCall('lookup:0', 'r');
    links.push(tracker.takeChainLink());
    expect(links[1]).toEqual({ whole: false, triples: [links[0]!.triples[0], 2] });
    tracker.observeCall('lookup:9', 'r');
    tracker.observeCall('lookup:8', 'r');
    links.push(tracker.takeChainLink());
    expect(links[2]!.whole).toBe(false);
    // 1 + 2 changes since the whole link of 4; 2 more make 5 ≥ 4: whole again (6 triples).
    tracker.observeCall('lookup:7', 'r');
    tracker.observeCall('lookup:6', 'r');
    links.push(tracker.takeChainLink());
    expect(links[3]!.whole).toBe(true);
    expect(fold(links)).toEqual(tracker.snapshot().triples);
  });

  it('a new task makes the next link whole (the chain does not carry the last task)', () => {
    const tracker = new ProgressTracker();
    tracker.observeCall('lookup:1', 'r');
    tracker.observeCall('lookup:2', 'r');
    tracker.takeChainLink();
    tracker.beginTask();
    tracker.observeCall('lookup:3', 'r');
    const link = tracker.takeChainLink();
    expect(link.whole).toBe(true);
    expect(link.triples).toHaveLength(2);
  });

  it('a tracker rebuilt from a chain continues it, and equals the one it was taken from', () => {
    const tracker = new ProgressTracker();
    for (let call = 0; call < 5; call++) tracker.observeCall(`lookup:${call}`, 'r');
    tracker.advanceState({ taskIndex: 0, reply: null });
    const whole = tracker.takeChainLink();
    tracker.observeCall('lookup:0', 'r');
    const change = tracker.takeChainLink();
    const rebuilt = ProgressTracker.fromChain(tracker.scalars(), new Map(Object.entries(fold([whole, change]))), {
      wholeSize: 5,
      sinceWhole: 1,
    });
    expect(rebuilt.snapshot()).toEqual(tracker.snapshot());
    rebuilt.observeCall('lookup:1', 'r');
    tracker.observeCall('lookup:1', 'r');
    expect(rebuilt.takeChainLink()).toEqual(tracker.takeChainLink());
    expect(rebuilt.observeCall('lookup:0', 'r').timesSeen).toBe(3);
  });
});

describe('ProgressTracker.applyChanges', () => {
  it('counts what it applies among the changes once they are tracked: a record that replaces one applied carries them', () => {
    const live = new ProgressTracker();
    live.trackChanges();
    live.observeCall('fingerprint-a', 'result');
    const applied = live.takeChanges();
    const rebuilt = new ProgressTracker();
    rebuilt.trackChanges();
    rebuilt.applyChanges(applied);
    expect(rebuilt.takeChanges()).toEqual(applied);
    // A task begun in the record applied: the next record says so, as `beginTask` makes it.
    live.beginTask();
    live.observeCall('fingerprint-b', 'result');
    const restarted = live.takeChanges();
    expect(restarted.restarted).toBe(true);
    rebuilt.applyChanges(restarted);
    expect(rebuilt.takeChanges()).toEqual(restarted);
  });

  it('tracks nothing until asked to', () => {
    const live = new ProgressTracker();
    live.trackChanges();
    live.observeCall('fingerprint-a', 'result');
    const rebuilt = new ProgressTracker();
    rebuilt.applyChanges(live.takeChanges());
    rebuilt.trackChanges();
    expect(rebuilt.takeChanges()).toMatchObject({ restarted: false, triples: {} });
  });
});
