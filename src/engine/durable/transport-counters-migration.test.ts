import { readFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';
import { createActor } from 'xstate';
import { loopMachine } from '../../../machines/loop-machine.js';
import type { LoopContext } from '../../../machines/types.js';
import { migrateTransportCounters } from './transport-counters-migration.js';

/** The machine snapshot of the schema-version-1 fixture, as written before transport attempts were per call. */
function historicalMachine(): Record<string, unknown> {
  const file = join(
    dirname(fileURLToPath(import.meta.url)),
    '..',
    '..',
    '..',
    'test',
    'durable',
    'fixtures',
    'records-v1.json',
  );
  const fixture = JSON.parse(readFileSync(file, 'utf8')) as { snapshot: { body: string } };
  return (JSON.parse(fixture.snapshot.body) as { machine: Record<string, unknown> }).machine;
}

/** The historical snapshot moved to another resting state with the task's transport retries it would have had. */
function historicalAt(
  value: unknown,
  changes: Record<string, unknown>,
  transportRetries: number,
): Record<string, unknown> {
  const machine = historicalMachine();
  const context = machine.context as Record<string, unknown>;
  return {
    ...machine,
    value,
    context: { ...context, ...changes, task: { ...(context.task as object), transportRetries } },
  };
}

const contextOf = (machine: unknown) =>
  (machine as { context: LoopContext & { task: Record<string, unknown> } }).context;

describe('migrateTransportCounters', () => {
  it('gives an old snapshot the per-call counters and the limits it ran under', () => {
    const migrated = contextOf(migrateTransportCounters(historicalAt({ RUNNING: 'acting' }, {}, 1)));
    // Not mid-retry: the call in hand is a fresh one; the task's retries are the run's total so far.
    expect(migrated.transport).toEqual({ consecutiveFailures: 0, retries: 1 });
    expect(migrated.task).not.toHaveProperty('transportRetries');
    expect(migrated.task).toEqual({ steps: 1, reflectionRetries: 0, argumentRepairs: 0 });
    // maxRetries 2 allowed one call 3 attempts; JSON carries the switched-off cap as null, like every Infinity.
    expect(migrated.limits).toMatchObject({ maxRetries: 2, maxTransportAttempts: 3, maxTransportRetries: null });
  });

  it('counts the failures in a row of a call being retried: backing off, or about to resend', () => {
    const backingOff = historicalAt({ RETRY: 'backingOff' }, { retryAt: 500 }, 2);
    expect(contextOf(migrateTransportCounters(backingOff)).transport).toEqual({ consecutiveFailures: 2, retries: 2 });
    const resending = historicalAt({ RUNNING: 'deciding' }, { feedback: { kind: 'transport_retry' } }, 1);
    expect(contextOf(migrateTransportCounters(resending)).transport).toEqual({ consecutiveFailures: 1, retries: 1 });
    const deciding = historicalAt({ RUNNING: 'deciding' }, { feedback: null }, 2);
    expect(contextOf(migrateTransportCounters(deciding)).transport).toEqual({ consecutiveFailures: 0, retries: 2 });
  });

  it('leaves a snapshot of this version, or something that is no snapshot, as it is', () => {
    const current = createActor(loopMachine, {
      input: {
        limits: contextOf(historicalMachine()).limits,
        noProgress: contextOf(historicalMachine()).noProgress,
        tasks: [{ id: 'main', onFailure: 'stop' }],
      },
    }).getPersistedSnapshot();
    expect(migrateTransportCounters(current)).toBe(current);
    expect(migrateTransportCounters(undefined)).toBeUndefined();
    expect(migrateTransportCounters({ value: 'READY' })).toEqual({ value: 'READY' });
  });

  it('resumes a run restored mid-backoff under the per-call rule: the call has its remaining attempts, no more', () => {
    // One decision, then the next call failed twice: three model calls, two retries of that call.
    const usage = { ...contextOf(historicalMachine()).usage, modelCalls: 3 };
    const migrated = migrateTransportCounters(
      historicalAt({ RETRY: 'backingOff' }, { retryAt: 500, usage }, 2),
    ) as Record<string, unknown>;
    const context = migrated.context as LoopContext;
    // As the durable journal restores it: a switched-off limit written as null is Infinity again.
    const limits = Object.fromEntries(
      Object.entries(context.limits).map(([name, value]) => [name, value === null ? Infinity : value]),
    ) as LoopContext['limits'];
    const input = { limits, noProgress: context.noProgress, tasks: context.tasks };
    const actor = createActor(loopMachine, {
      input,
      snapshot: { ...migrated, context: { ...context, limits } } as never,
    }).start();
    actor.send({ type: 'backoff.elapsed', at: 500 });
    actor.send({
      type: 'model.failed',
      at: 600,
      failure: 'transient',
      message: 'still down',
      status: 503,
      retryDelayMs: 10,
    });
    const output = actor.getSnapshot().output;
    expect(output?.stopReason).toBe('retries_exhausted');
    expect(output?.detail).toBe(
      'task main: 3rd consecutive transport failure of model call 2 (HTTP 503); raise limits.maxTransportAttempts (3). Last error: still down',
    );
    actor.stop();
  });
});
