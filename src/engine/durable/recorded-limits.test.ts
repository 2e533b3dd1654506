import { describe, expect, it } from 'vitest';
import { DEFAULT_LIMITS } from '../constants.js';
import { resolveLimits } from '../config/config.js';
import { limitsKeptWarning, recordLimits, recordedLimitsSchema, runLimits, withRunLimits } from './recorded-limits.js';

describe('recorded limits', () => {
  it('go through JSON and back, switched-off limits included', () => {
    const limits = resolveLimits({ maxSteps: 4, deadlineMs: Infinity, maxCostUsd: Infinity });
    const stored = recordedLimitsSchema.parse(JSON.parse(JSON.stringify(recordLimits(limits))));
    expect(stored).toMatchObject({ maxSteps: 4, deadlineMs: null, maxCostUsd: null });
    expect(runLimits(stored, resolveLimits({ maxSteps: 14 }))).toEqual(limits);
  });

  it("take the resuming loop's value for a limit the record does not name, and all of them without a record", () => {
    const loop = resolveLimits({ maxSteps: 14 });
    const { maxToolCalls: _left, ...olderRecord } = recordLimits(resolveLimits({ maxSteps: 4 }));
    expect(runLimits(olderRecord, loop)).toEqual({
      ...resolveLimits({ maxSteps: 4 }),
      maxToolCalls: loop.maxToolCalls,
    });
    expect(runLimits(undefined, loop)).toBe(loop);
  });

  it('are named in a warning where the resuming loop differs, and only there', () => {
    const run = resolveLimits({ maxSteps: 4, maxStepsPerTask: 4 });
    expect(limitsKeptWarning(run, resolveLimits({ maxSteps: 14, maxStepsPerTask: 4, deadlineMs: Infinity }))).toBe(
      `resumed by a loop with other limits; the run keeps the limits it started with: maxSteps 4 (this loop: 14), deadlineMs ${DEFAULT_LIMITS.deadlineMs} (this loop: Infinity), maxToolCalls ${run.maxToolCalls} (this loop: ${resolveLimits({ maxSteps: 14 }).maxToolCalls})`,
    );
    expect(limitsKeptWarning(run, { ...run })).toBeNull();
  });

  it("replace a machine snapshot's limits whole", () => {
    const limits = resolveLimits({ maxSteps: 4 });
    const machine = {
      status: 'active',
      value: 'RUNNING',
      context: { steps: 2, limits: { ...resolveLimits({ maxSteps: 14 }), deadlineMs: null } },
    };
    expect(withRunLimits(machine, limits)).toEqual({ ...machine, context: { steps: 2, limits } });
  });
});
