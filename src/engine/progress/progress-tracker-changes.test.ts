import { describe, expect, it } from 'vitest';
import { ProgressTracker } from './progress-tracker.js';

describe('ProgressTracker changes', () => {
  it('replays onto a copy taken earlier to the same state, task restarts included', () => {
    const live = new ProgressTracker();
    live.trackChanges();
    live.observeCall('a', '1');
    live.advanceState({ taskIndex: 0, reply: null });
    const copy = ProgressTracker.restore(live.snapshot());
    live.takeChanges();
    const steps: ((tracker: ProgressTracker) => void)[] = [
      (tracker) => tracker.observeCall('a', '1'),
      (tracker) => tracker.noteFailure(),
      (tracker) => tracker.observeCall('b', '2'),
      (tracker) => tracker.beginTask(),
      (tracker) => tracker.observeCall('c', '3'),
      (tracker) => tracker.advanceState({ taskIndex: 1, reply: 'final\nok' }),
    ];
    for (const step of steps) {
      step(live);
      copy.applyChanges(live.takeChanges());
      expect(copy.snapshot()).toEqual(live.snapshot());
    }
  });

  it('carries only what changed', () => {
    const tracker = new ProgressTracker();
    tracker.trackChanges();
    for (let index = 0; index < 50; index++) tracker.observeCall(`call ${index}`, 'result');
    tracker.takeChanges();
    tracker.observeCall('call 3', 'result');
    expect(Object.keys(tracker.takeChanges().triples)).toHaveLength(1);
  });

  it('costs nothing until asked to track', () => {
    const tracker = new ProgressTracker();
    tracker.observeCall('a', '1');
    expect(tracker.takeChanges().triples).toEqual({});
  });
});
