/**
 * A bug in the loop machine (a transition that throws) ends the run the same way with an actor (an inspected run)
 * and without one: the run rejects with the transition's error, once. With an actor, XState keeps the snapshot
 * before the event in an `error` status and drops later events: a driver that only asked the pending effect again
 * would call the model forever (a hang) while XState threw the error unhandled on a later tick.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, afterEach, describe, expect, it, vi } from 'vitest';
import { createLoop, type LoopConfig, type Model } from 'loopstate';
import { sqliteStore } from '../../adapters/sqlite/sqlite-store.js';
import { loopMachine } from '../../../machines/index.js';
import { reply, scriptedModel, virtualClock } from '../../testing/index.js';

afterEach(() => {
  vi.restoreAllMocks();
});

const folder = mkdtempSync(join(tmpdir(), 'loopstate-machine-error-'));
afterAll(() => rmSync(folder, { recursive: true, force: true }));

/** Throws on every `breaksOn` event, whether an actor or a run without one takes it. */
function breakTransitionOn(breaksOn: string, thrown: unknown): { throws: () => number } {
  const transition = loopMachine.transition.bind(loopMachine);
  let throws = 0;
  vi.spyOn(loopMachine, 'transition').mockImplementation(((snapshot, event, scope) => {
    if (event.type === breaksOn) {
      throws++;
      throw thrown;
    }
    return transition(snapshot, event, scope);
  }) as typeof loopMachine.transition);
  return { throws: () => throws };
}

/** A model that answers five calls; a sixth says the run is looping, and never settles. */
function countingModel(): { model: Model; calls: () => number; looping: Promise<'looping'> } {
  const scripted = scriptedModel([reply('x'), reply('x'), reply('x'), reply('x'), reply('x')]);
  let calls = 0;
  let loops: (value: 'looping') => void = () => undefined;
  const looping = new Promise<'looping'>((resolve) => (loops = resolve));
  const model: Model = {
    id: scripted.id,
    generate: (request) => {
      if (++calls > 5) {
        loops('looping');
        return new Promise(() => undefined);
      }
      return scripted.generate(request);
    },
  };
  return { model, calls: () => calls, looping };
}

/** How the run is driven: without an actor, through an inspected actor, or through a durable run's actor. */
type Way = 'actorless' | 'inspected' | 'durable';

async function runBroken(
  way: Way,
  thrown: unknown = new Error('machine bug'),
): Promise<{ outcome: string; modelCalls: number; throws: number; uncaught: unknown[] }> {
  const uncaught: unknown[] = [];
  const noteUncaught = (error: unknown) => void uncaught.push(error);
  process.on('uncaughtException', noteUncaught);
  try {
    const broken = breakTransitionOn('model.responded', thrown);
    const { model, calls, looping } = countingModel();
    const config: LoopConfig = {
      clock: virtualClock(5),
      model,
      ...(way === 'inspected' ? { inspect: () => undefined } : {}),
      ...(way === 'durable' ? { store: sqliteStore({ path: join(folder, 'runs.db') }) } : {}),
    };
    const run = createLoop(config)
      .run({ goal: 'g' })
      .then(
        (result) => `resolved ${result.stopReason}`,
        (error: unknown) => `rejected ${error instanceof Error ? '' : 'a non-Error '}${String(error)}`,
      );
    const outcome = await Promise.race([run, looping]);
    // A tick for XState to throw an error no observer took (it throws it on a later macrotask).
    await new Promise((resolve) => setTimeout(resolve, 0));
    return { outcome, modelCalls: calls(), throws: broken.throws(), uncaught };
  } finally {
    process.off('uncaughtException', noteUncaught);
    vi.restoreAllMocks();
  }
}

describe('a transition that throws (a bug in the machine)', () => {
  it('ends an inspected run (an actor): it rejects with the error after one model call', async () => {
    const ended = await runBroken('inspected');
    expect(ended).toEqual({ outcome: 'rejected Error: machine bug', modelCalls: 1, throws: 1, uncaught: [] });
  });

  it('ends a durable run (an actor whose snapshots a SQLite journal keeps) the same way', async () => {
    const ended = await runBroken('durable');
    expect(ended).toEqual({ outcome: 'rejected Error: machine bug', modelCalls: 1, throws: 1, uncaught: [] });
  });

  it('ends a run without an actor the same way (the actor it is handed to fails too)', async () => {
    const ended = await runBroken('actorless');
    expect(ended.outcome).toBe('rejected Error: machine bug');
    expect(ended.modelCalls).toBe(1);
    // Without an actor, then in the actor restored from the snapshot before the event.
    expect(ended.throws).toBe(2);
    expect(ended.uncaught).toEqual([]);
  });

  it('rejects with an Error when the transition threw something else (with an actor, whose snapshot holds it)', async () => {
    const ended = await runBroken('inspected', 'a thrown string');
    expect(ended.outcome).toMatch(/^rejected Error: .*a thrown string/);
    expect(ended.modelCalls).toBe(1);
    expect(ended.uncaught).toEqual([]);
  });
});
