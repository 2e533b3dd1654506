import type * as Crypto from 'node:crypto';
import { describe, expect, it, vi } from 'vitest';
import { LoopstateError } from '../errors.js';
import { ProgressTracker } from './progress-tracker.js';
import { toolCallFingerprint } from './tool-call-fingerprint.js';

// Counts the bytes the tracker hashes, so the tests can show per-step work does not grow with history.
const hashing = vi.hoisted(() => ({ bytes: 0 }));
vi.mock('node:crypto', async (importOriginal) => {
  const actual = await importOriginal<typeof Crypto>();
  return {
    ...actual,
    hash(algorithm: string, data: string, outputEncoding: Crypto.BinaryToTextEncoding) {
      hashing.bytes += Buffer.byteLength(data, 'utf8');
      return actual.hash(algorithm, data, outputEncoding);
    },
  };
});

function bytesHashedBy(action: () => void): number {
  const before = hashing.bytes;
  action();
  return hashing.bytes - before;
}

describe('ProgressTracker.countToolCall', () => {
  it('counts each fingerprint separately, this call included', () => {
    const tracker = new ProgressTracker();
    const lookup = toolCallFingerprint('lookup', { id: 1 });
    expect(tracker.countToolCall(lookup)).toBe(1);
    expect(tracker.countToolCall(toolCallFingerprint('lookup', { id: 2 }))).toBe(1);
    expect(tracker.countToolCall(lookup)).toBe(2);
    expect(tracker.countToolCall(toolCallFingerprint('lookup', { id: 1 }))).toBe(3);
  });
});

describe('ProgressTracker.observe', () => {
  it('reports whether the exact observation was seen before in the run', () => {
    const tracker = new ProgressTracker();
    expect(tracker.observe('{"status":"pending"}')).toBe(false);
    expect(tracker.observe('{"status":"shipped"}')).toBe(false);
    expect(tracker.observe('{"status":"pending"}')).toBe(true);
    expect(tracker.observe('{"status":"pending"} ')).toBe(false);
  });

  it('keeps hashes, never the content', () => {
    const tracker = new ProgressTracker();
    tracker.observe('secret customer address');
    tracker.countToolCall('lookup:{"email":"ada@example.com"}');
    const saved = JSON.stringify(tracker.snapshot());
    expect(saved).not.toContain('secret');
    expect(saved).not.toContain('ada@example.com');
  });
});

describe('ProgressTracker.advanceState', () => {
  const advance = (tracker: ProgressTracker, observations: string[], reply: string | null, taskIndex = 0) =>
    tracker.advanceState({ taskIndex, observations, reply });

  it('starts empty and returns the new digest, also readable as stateDigest', () => {
    const tracker = new ProgressTracker();
    expect(tracker.stateDigest).toBe('');
    const digest = advance(tracker, [], 'hello');
    expect(digest).toMatch(/^[0-9a-f]{40}$/);
    expect(tracker.stateDigest).toBe(digest);
  });

  it('stays the same when the model repeats its reply and learns nothing new', () => {
    const tracker = new ProgressTracker();
    const first = advance(tracker, ['obs-1'], null);
    expect(advance(tracker, [], null)).toBe(first);
    expect(advance(tracker, ['obs-1'], null)).toBe(first);
  });

  it('changes when a new distinct observation arrives', () => {
    const tracker = new ProgressTracker();
    const first = advance(tracker, ['obs-1'], null);
    expect(advance(tracker, ['obs-2'], null)).not.toBe(first);
  });

  it('changes for an observation recorded through observe() since the last update', () => {
    const tracker = new ProgressTracker();
    const first = advance(tracker, [], null);
    tracker.observe('new result');
    const second = advance(tracker, ['new result'], null);
    expect(second).not.toBe(first);
    expect(advance(tracker, ['new result'], null)).toBe(second);
  });

  it('changes when the reply text differs, and tells a null reply from an empty one', () => {
    const tracker = new ProgressTracker();
    const a = advance(tracker, [], 'draft A');
    const b = advance(tracker, [], 'draft B');
    const none = advance(tracker, [], null);
    const empty = advance(tracker, [], '');
    expect(new Set([a, b, none, empty]).size).toBe(4);
    expect(advance(tracker, [], 'draft A')).toBe(a);
  });

  it('changes when the task differs', () => {
    const tracker = new ProgressTracker();
    const taskZero = advance(tracker, [], 'same', 0);
    expect(advance(tracker, [], 'same', 1)).not.toBe(taskZero);
  });

  it('registers its observations as seen, exactly like observe()', () => {
    const tracker = new ProgressTracker();
    advance(tracker, ['result'], null);
    expect(tracker.observe('result')).toBe(true);
  });

  it('is deterministic: two trackers fed the same inputs agree', () => {
    const feed = (tracker: ProgressTracker) => [advance(tracker, ['a', 'b'], null), advance(tracker, ['c'], 'done', 1)];
    expect(feed(new ProgressTracker())).toEqual(feed(new ProgressTracker()));
  });
});

describe('ProgressTracker cost', () => {
  it('hashes only the new step, however long the history is', () => {
    const tracker = new ProgressTracker();
    const step = (index: number) => () => {
      tracker.countToolCall(toolCallFingerprint('lookup', { page: index % 1_000_000 }));
      tracker.observe(`result ${index % 1_000_000}`);
      tracker.advanceState({ taskIndex: 0, observations: [`result ${index % 1_000_000}`], reply: `reply ${index % 1_000_000}` });
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
  it('round-trips through JSON: counts, seen observations and digests carry on identically', () => {
    const original = new ProgressTracker();
    original.countToolCall('lookup:{"id":1}');
    original.countToolCall('lookup:{"id":1}');
    original.advanceState({ taskIndex: 0, observations: ['a', 'b'], reply: null });
    const restored = ProgressTracker.restore(JSON.parse(JSON.stringify(original.snapshot())));
    expect(restored.snapshot()).toEqual(original.snapshot());
    expect(restored.stateDigest).toBe(original.stateDigest);
    expect(restored.countToolCall('lookup:{"id":1}')).toBe(3);
    expect(restored.observe('a')).toBe(true);
    expect(restored.advanceState({ taskIndex: 0, observations: ['c'], reply: 'x' })).toBe(
      original.advanceState({ taskIndex: 0, observations: ['c'], reply: 'x' }),
    );
  });

  it('is versioned plain data', () => {
    expect(new ProgressTracker().snapshot()).toEqual({
      schemaVersion: 1,
      toolCallCounts: {},
      observationHashes: [],
      distinctObservationsHash: '',
      stateDigest: '',
    });
  });

  it('rejects a malformed snapshot naming the bad field', () => {
    const valid = new ProgressTracker().snapshot();
    expect(() => ProgressTracker.restore({ ...valid, schemaVersion: 2 })).toThrow(LoopstateError);
    expect(() => ProgressTracker.restore({ ...valid, toolCallCounts: { abc: 0 } })).toThrow(/toolCallCounts\.abc: Too small/);
    expect(() => ProgressTracker.restore(null)).toThrow(/Invalid progress tracker snapshot: \(root\)/);
    const error = (() => {
      try {
        ProgressTracker.restore({ ...valid, observationHashes: 'x' });
      } catch (caught) {
        return caught;
      }
    })();
    expect(error).toMatchObject({ code: 'invalid_snapshot', message: expect.stringContaining('observationHashes') });
  });
});

describe('ProgressTracker.lastObservationHash', () => {
  it('names the last observed content by its sha1, for seen and new observations alike', async () => {
    const { hash } = await vi.importActual<typeof Crypto>('node:crypto');
    const tracker = new ProgressTracker();
    tracker.observe('first');
    expect(tracker.lastObservationHash).toBe(hash('sha1', 'first', 'hex'));
    tracker.observe('second');
    tracker.observe('first');
    expect(tracker.lastObservationHash).toBe(hash('sha1', 'first', 'hex'));
  });
});
