import { describe, expect, it } from 'vitest';
import { createActor, type InspectionEvent } from 'xstate';
import { loopMachine, type LoopSnapshot } from '../../../machines/index.js';
import { loopSetupOf } from './loop-setup.js';
import { LoopConfigError } from '../../contracts/errors.js';
import { createLoop, loopConfigOf } from '../loop.js';
import { virtualClock } from '../../testing/index.js';
import { sampleLoopConfig } from '../../../test/support/sample-run.js';
import { guardedInspector, isInspectOption } from './inspect-option.js';

const goal = 'Status of O-101?';

describe('the inspect option', () => {
  it('hands every inspection event of the run to a function observer', async () => {
    const seen: InspectionEvent[] = [];
    const result = await createLoop(sampleLoopConfig(virtualClock(), { inspect: (event) => seen.push(event) })).run({
      goal,
    });
    expect(result.stopReason).toBe('completed');
    const events = seen.filter((event) => event.type === '@xstate.event').map((event) => event.event.type);
    expect(events).toEqual(
      expect.arrayContaining([
        'run.started',
        'model.failed',
        'backoff.elapsed',
        'tools.completed',
        'evaluation.completed',
      ]),
    );
    expect(seen.some((event) => event.type === '@xstate.snapshot')).toBe(true);
  });

  it("sees the run's initial state, as a fresh actor starts in it, before run.started", async () => {
    const seen: InspectionEvent[] = [];
    const loop = createLoop(sampleLoopConfig(virtualClock(), { inspect: (event) => seen.push(event) }));
    await loop.run({ goal });
    const types = seen.map((event) => `${event.type} ${'event' in event ? event.event.type : ''}`);
    expect(types.slice(0, 4)).toEqual([
      '@xstate.actor ',
      '@xstate.event xstate.init',
      '@xstate.snapshot xstate.init',
      '@xstate.event run.started',
    ]);
    const initial = seen[2]?.type === '@xstate.snapshot' ? (seen[2].snapshot as LoopSnapshot) : undefined;
    const config = loopConfigOf(loop);
    if (config === undefined) throw new Error('no config on the loop');
    const fresh = createActor(loopMachine, { input: loopSetupOf(config).machineInput }).getSnapshot();
    expect(initial?.value).toBe('READY');
    expect(initial?.status).toBe('active');
    expect(initial?.context).toEqual(fresh.context);
  });

  it('a throwing observer never breaks a run: same result, one warning', async () => {
    const plain = await createLoop(sampleLoopConfig(virtualClock())).run({ goal });
    let calls = 0;
    const throwing = await createLoop(
      sampleLoopConfig(virtualClock(), {
        inspect: {
          next: () => {
            calls++;
            throw new Error('observer exploded');
          },
        },
      }),
    ).run({ goal });
    expect(throwing.stopReason).toBe('completed');
    expect(throwing.output).toEqual(plain.output);
    expect(throwing.usage).toEqual(plain.usage);
    expect(throwing.warnings).toEqual([
      'the inspect observer threw, and the run went on without it: observer exploded',
    ]);
    // Still called after the first throw: one bad event does not switch it off.
    expect(calls).toBeGreaterThan(10);
  });

  it('a throwing function observer never breaks a run either', async () => {
    const result = await createLoop(
      sampleLoopConfig(virtualClock(), {
        inspect: () => {
          throw new TypeError('nope');
        },
      }),
    ).run({ goal });
    expect(result.stopReason).toBe('completed');
    expect(result.warnings).toHaveLength(1);
  });

  it('refuses what is not an observer, naming the field', () => {
    const config = { ...sampleLoopConfig(virtualClock()), inspect: 42 } as unknown as Parameters<typeof createLoop>[0];
    expect(() => createLoop(config)).toThrow(LoopConfigError);
    expect(() => createLoop(config)).toThrow(/inspect: expected an XState inspection observer/);
  });
});

describe('isInspectOption', () => {
  it('accepts functions and observer objects, refuses the rest', () => {
    expect(isInspectOption(() => undefined)).toBe(true);
    expect(isInspectOption({ next: () => undefined })).toBe(true);
    expect(isInspectOption({ complete: () => undefined })).toBe(true);
    expect(isInspectOption({})).toBe(false);
    expect(isInspectOption({ next: 1 })).toBe(false);
    expect(isInspectOption(null)).toBe(false);
  });
});

describe('guardedInspector', () => {
  it('swallows throws from error and complete too, reporting only the first', () => {
    const reports: string[] = [];
    const observer = guardedInspector(
      {
        next: () => undefined,
        error: () => {
          throw new Error('a');
        },
        complete: () => {
          throw new Error('b');
        },
      },
      (message) => reports.push(message),
    );
    expect(() => observer.error?.(new Error('x'))).not.toThrow();
    expect(() => observer.complete?.()).not.toThrow();
    expect(reports).toHaveLength(1);
  });
});
