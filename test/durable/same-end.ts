/**
 * What the durable tests compare a resumed run with: the same run never interrupted.
 */
import { expect } from 'vitest';
import type { RunResult } from 'loopstate';

/** A run's trace without its `run-resume` events: what the uninterrupted run's trace holds. */
export const withoutResumes = (result: RunResult) => result.trace.filter((event) => event.type !== 'run-resume');

/** `result` ended as `expected` did: the same stop, steps, messages, usage and trace (but the resumes). */
export function expectSameEnd(result: RunResult, expected: RunResult): void {
  expect(result.stopReason).toBe(expected.stopReason);
  expect(result.detail).toBe(expected.detail);
  expect(result.steps).toBe(expected.steps);
  expect(result.messages).toEqual(expected.messages);
  expect(result.usage).toEqual(expected.usage);
  expect(withoutResumes(result)).toEqual(withoutResumes(expected));
}
