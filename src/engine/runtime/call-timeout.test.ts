/**
 * `callWithTimeout`: one call bounded by its own timeout and the run's abort, on the run's clock; the default
 * timeout error made only when the timer fires, the call started in a microtask, every timer and waiter let go.
 */
import { setFlagsFromString } from 'node:v8';
import { runInNewContext } from 'node:vm';
import { afterEach, describe, expect, it, vi } from 'vitest';
import { ModelCallError } from '../../contracts/errors.js';
import { scriptedModel } from '../../testing/index.js';
import { virtualClock, type VirtualClock } from '../../testing/virtual-clock.js';
import { resolveConfig } from '../config/config.js';
import { RunAbort } from './abort-fanout.js';
import { callWithTimeout, callWithTimeoutThen, type CallSettlement } from './call-timeout.js';
import { RunSession } from './run-session.js';
import { reusableTimer, systemClock } from './clock.js';

/** A run's session on a clock whose timers the test counts and fires. */
function sessionOn(clock: VirtualClock): { session: RunSession; run: RunAbort; timers: () => number } {
  // Timers armed and neither fired nor cancelled yet (a cancel after the timer fired is harmless).
  const armed = new Set<object>();
  const counted = {
    ...clock,
    setTimer(ms: number, callback: () => void) {
      const timer = {};
      armed.add(timer);
      const cancel = clock.setTimer(ms, () => {
        armed.delete(timer);
        callback();
      });
      return () => {
        armed.delete(timer);
        cancel();
      };
    },
  };
  const run = new RunAbort();
  const config = resolveConfig({ model: scriptedModel([]), clock: counted });
  return { session: new RunSession(config, 'run_1', 'goal', run), run, timers: () => armed.size };
}

const never = () => new Promise<never>(() => undefined);

describe('callWithTimeout', () => {
  it('rejects a call that outlasts its timeout with a timeout ModelCallError naming it, and aborts its signal', async () => {
    const clock = virtualClock();
    const { session, timers } = sessionOn(clock);
    let signal: AbortSignal | undefined;
    const call = callWithTimeout(session, 5_000, 'the model call', (scope) => {
      signal = scope.signal;
      return never();
    });
    await Promise.resolve();
    expect(timers()).toBe(1);
    clock.advance(4_999);
    clock.advance(1);
    const error = await call.then(
      () => null,
      (reason: unknown) => reason,
    );
    expect(ModelCallError.is(error)).toBe(true);
    expect(error).toMatchObject({
      kind: 'timeout',
      message: 'the model call took longer than modelCallTimeoutMs (5000 ms)',
    });
    expect(signal?.aborted).toBe(true);
    expect(signal?.reason).toBe(error);
    expect(timers()).toBe(0);
  });

  it('rejects with the error a caller gives for its own limit, made only if the timer fires', async () => {
    const clock = virtualClock();
    const { session } = sessionOn(clock);
    let made = 0;
    const timeoutError = () => {
      made++;
      return new Error('the judge took too long');
    };
    await expect(callWithTimeout(session, 1_000, 'a judge', () => 'in time', timeoutError)).resolves.toBe('in time');
    expect(made).toBe(0);
    const late = callWithTimeout(session, 1_000, 'a judge', never, timeoutError);
    clock.advance(1_000);
    await expect(late).rejects.toThrow('the judge took too long');
    expect(made).toBe(1);
  });

  it("rejects with the run's abort reason, and lets go of its timer and its waiter either way", async () => {
    const clock = virtualClock();
    const { session, run, timers } = sessionOn(clock);
    await expect(callWithTimeout(session, 5_000, 'the model call', async () => 'done')).resolves.toBe('done');
    expect(timers()).toBe(0);
    const waiting = callWithTimeout(session, 5_000, 'the model call', never);
    const reason = new Error('cancelled');
    run.abort(reason);
    await expect(waiting).rejects.toBe(reason);
    expect(timers()).toBe(0);
    // Aborted before the call: no timer is armed, and the call still starts (it sees an aborted signal).
    let sawAborted: boolean | undefined;
    await expect(
      callWithTimeout(session, 5_000, 'the model call', (scope) => {
        sawAborted = scope.signal.aborted;
        return 'late';
      }),
    ).rejects.toBe(reason);
    await Promise.resolve();
    expect(sawAborted).toBe(true);
    expect(timers()).toBe(0);
  });

  it('starts the call in a microtask, so one that throws at once rejects like one that rejects; Infinity arms no timer', async () => {
    const clock = virtualClock();
    const { session, timers } = sessionOn(clock);
    let started = false;
    const call = callWithTimeout(session, Infinity, 'the model call', () => {
      started = true;
      throw new Error('threw at once');
    });
    expect(started).toBe(false);
    expect(timers()).toBe(0);
    await expect(call).rejects.toThrow('threw at once');
    expect(started).toBe(true);
  });
});

describe('callWithTimeoutThen', () => {
  /** A settlement that writes down each outcome it is handed. */
  function outcomes(): { then: CallSettlement<string, string>; heard: string[] } {
    const heard: string[] = [];
    return {
      heard,
      then: {
        fulfilled: (value) => {
          heard.push(`fulfilled ${value}`);
          return `event for ${value}`;
        },
        failed: (error) => {
          heard.push(`failed ${(error as Error).message}`);
          return 'failure event';
        },
      },
    };
  }

  it("settles with what the settlement makes of the call's value or its rejection", async () => {
    const { session, timers } = sessionOn(virtualClock());
    const { then, heard } = outcomes();
    await expect(callWithTimeoutThen(session, 5_000, 'the model call', async () => 'reply', then)).resolves.toBe(
      'event for reply',
    );
    await expect(
      callWithTimeoutThen(session, 5_000, 'the model call', () => Promise.reject(new Error('refused')), then),
    ).resolves.toBe('failure event');
    // A call that throws at once is a failure like a rejection (it starts in a microtask).
    await expect(
      callWithTimeoutThen(
        session,
        5_000,
        'the model call',
        () => {
          throw new Error('threw');
        },
        then,
      ),
    ).resolves.toBe('failure event');
    expect(heard).toEqual(['fulfilled reply', 'failed refused', 'failed threw']);
    expect(timers()).toBe(0);
  });

  it('hands on the timeout and the abort once: the call settling afterwards changes nothing', async () => {
    const clock = virtualClock();
    const { session, run, timers } = sessionOn(clock);
    const { then, heard } = outcomes();
    // A call that rejects once its signal aborts, as a model adapter does: the timeout was already handed on.
    const timedOut = callWithTimeoutThen(
      session,
      1_000,
      'the model call',
      (scope) =>
        new Promise<string>((_, reject) => scope.signal.addEventListener('abort', () => reject(new Error('aborted')))),
      then,
    );
    await Promise.resolve();
    clock.advance(1_000);
    await expect(timedOut).resolves.toBe('failure event');
    await new Promise((resolve) => setImmediate(resolve));
    expect(heard).toEqual(['failed the model call took longer than modelCallTimeoutMs (1000 ms)']);
    // The run aborts, then the call fulfils late: the abort alone is handed on.
    let answer: (value: string) => void = () => undefined;
    const aborted = callWithTimeoutThen(
      session,
      1_000,
      'the model call',
      () => new Promise<string>((resolve) => (answer = resolve)),
      then,
    );
    await Promise.resolve();
    run.abort(new Error('cancelled'));
    await expect(aborted).resolves.toBe('failure event');
    answer('too late');
    await new Promise((resolve) => setImmediate(resolve));
    expect(heard.slice(1)).toEqual(['failed cancelled']);
    expect(timers()).toBe(0);
  });

  it('rejects with what the settlement throws', async () => {
    const { session } = sessionOn(virtualClock());
    const broken: CallSettlement<string, string> = {
      fulfilled: () => {
        throw new Error('bad reply handler');
      },
      failed: () => {
        throw new Error('bad failure handler');
      },
    };
    await expect(callWithTimeoutThen(session, 5_000, 'a call', async () => 'reply', broken)).rejects.toThrow(
      'bad reply handler',
    );
    await expect(
      callWithTimeoutThen(session, 5_000, 'a call', () => Promise.reject(new Error('x')), broken),
    ).rejects.toThrow('bad failure handler');
  });

  it("keeps none of the caller's settlement once settled, though the call itself never settles", async () => {
    setFlagsFromString('--expose-gc');
    const gc = runInNewContext('gc') as () => void;
    const clock = virtualClock();
    const { session } = sessionOn(clock);
    // A model that ignores its signal: its promise, and what it holds (the call's own object), live on.
    const hung = never();
    const { settled, settlementRef } = (() => {
      const settlement: CallSettlement<string, string> = { fulfilled: () => 'reply', failed: () => 'timed out' };
      return {
        settled: callWithTimeoutThen(session, 1_000, 'the model call', () => hung, settlement),
        settlementRef: new WeakRef(settlement),
      };
    })();
    await Promise.resolve();
    clock.advance(1_000);
    await expect(settled).resolves.toBe('timed out');
    for (let round = 0; round < 3 && settlementRef.deref() !== undefined; round++) {
      await new Promise((resolve) => setTimeout(resolve, 0));
      gc();
    }
    expect(settlementRef.deref()).toBeUndefined();
    expect(hung).toBeInstanceOf(Promise);
  });
});

describe("the run's one call timer on the system clock", () => {
  afterEach(() => {
    vi.restoreAllMocks();
  });

  /** A run's session on the wall clock (the default), and the Node timers it holds the process open with. */
  function wallSession(): { session: RunSession; run: RunAbort } {
    const run = new RunAbort();
    const config = resolveConfig({ model: scriptedModel([]) });
    return { session: new RunSession(config, 'run_1', 'goal', run), run };
  }
  const refedTimeouts = () => process.getActiveResourcesInfo().filter((kind) => kind === 'Timeout').length;

  it('re-arms one Node timer for call after call, lets it hold the process only while a call is out, and clears it at the end', async () => {
    const { session } = wallSession();
    const setTimeoutSpy = vi.spyOn(globalThis, 'setTimeout');
    const before = refedTimeouts();
    for (let call = 0; call < 5; call++) {
      let during = -1;
      await expect(
        callWithTimeout(session, 60_000, 'the model call', () => {
          during = refedTimeouts();
          return `reply ${call}`;
        }),
      ).resolves.toBe(`reply ${call}`);
      expect(during).toBe(before + 1);
      expect(refedTimeouts()).toBe(before);
    }
    // One timer for the five calls (a timer a call before).
    expect(setTimeoutSpy).toHaveBeenCalledTimes(1);
    session.closeCallTimer();
    expect(session.callTimer).toBeNull();
    // After the run's end a call sets a timer of its own, and lets it go.
    await expect(callWithTimeout(session, 60_000, 'late', () => 'ok')).resolves.toBe('ok');
    expect(setTimeoutSpy).toHaveBeenCalledTimes(2);
    expect(refedTimeouts()).toBe(before);
  });

  it('times out a later call after earlier ones settled in time, with the same error as a timer of its own', async () => {
    const { session } = wallSession();
    await expect(callWithTimeout(session, 30, 'the model call', () => 'fast')).resolves.toBe('fast');
    await expect(callWithTimeout(session, 30, 'the model call', () => 'fast')).resolves.toBe('fast');
    let signal: AbortSignal | undefined;
    const error = await callWithTimeout(session, 30, 'the model call', (scope) => {
      signal = scope.signal;
      return never();
    }).then(
      () => null,
      (reason: unknown) => reason,
    );
    expect(ModelCallError.is(error)).toBe(true);
    expect(error).toMatchObject({
      kind: 'timeout',
      message: 'the model call took longer than modelCallTimeoutMs (30 ms)',
    });
    expect(signal?.reason).toBe(error);
    session.closeCallTimer();
  });

  it("a call that settles after its timeout leaves the next call's timer armed", async () => {
    const { session } = wallSession();
    let settleFirst: (value: string) => void = () => undefined;
    const first = callWithTimeout(
      session,
      30,
      'the first call',
      () => new Promise<string>((resolve) => (settleFirst = resolve)),
    );
    await expect(first).rejects.toMatchObject({ kind: 'timeout' });
    const second = callWithTimeout(session, 30, 'the second call', never);
    // The abandoned first call settles now, while the second waits on the timer.
    settleFirst('late');
    await Promise.resolve();
    await expect(second).rejects.toMatchObject({
      kind: 'timeout',
      message: 'the second call took longer than modelCallTimeoutMs (30 ms)',
    });
    session.closeCallTimer();
  });

  it('gives a call out at the same time, or with another timeout, a timer of its own; each times out', async () => {
    const { session } = wallSession();
    const setTimeoutSpy = vi.spyOn(globalThis, 'setTimeout');
    const outcomes = await Promise.allSettled([
      callWithTimeout(session, 30, 'the model call', never),
      callWithTimeout(session, 30, 'a judge', never),
      callWithTimeout(session, 40, 'an evaluator', never),
    ]);
    expect(
      outcomes.map((outcome) => (outcome.status === 'rejected' ? (outcome.reason as Error).message : null)),
    ).toEqual([
      'the model call took longer than modelCallTimeoutMs (30 ms)',
      'a judge took longer than modelCallTimeoutMs (30 ms)',
      'an evaluator took longer than modelCallTimeoutMs (40 ms)',
    ]);
    expect(setTimeoutSpy).toHaveBeenCalledTimes(3);
    // The shared timer is free again: the next call of its duration re-arms it rather than setting another.
    await expect(callWithTimeout(session, 30, 'the model call', () => 'ok')).resolves.toBe('ok');
    expect(setTimeoutSpy).toHaveBeenCalledTimes(3);
    session.closeCallTimer();
  });

  it('is only for the system clock: a run on any other clock sets its timers there', () => {
    const { session } = sessionOn(virtualClock());
    expect(session.callTimer).toBeNull();
    expect(reusableTimer(systemClock)).not.toBeNull();
    expect(reusableTimer({ ...systemClock })).toBeNull();
  });
});
