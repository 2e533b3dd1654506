import { afterEach, describe, expect, it, vi } from 'vitest';
import { interruptionOf, RunInterruption, untilAborted } from './interruption.js';

/** A promise the test settles by hand. */
function deferred<T>() {
  let resolve!: (value: T) => void;
  let reject!: (reason: unknown) => void;
  const promise = new Promise<T>((onResolve, onReject) => {
    resolve = onResolve;
    reject = onReject;
  });
  return { promise, resolve, reject };
}

const never = () => new Promise<never>(() => {});

afterEach(() => {
  vi.restoreAllMocks();
});

describe('untilAborted', () => {
  it('resolves with the promise when the signal stays quiet', async () => {
    await expect(untilAborted(Promise.resolve(42), new AbortController().signal)).resolves.toBe(42);
  });

  it('rejects with the very error the promise rejects with', async () => {
    const error = new Error('boom');
    await expect(untilAborted(Promise.reject(error), new AbortController().signal)).rejects.toBe(error);
  });

  it("rejects with the signal's reason when it aborts first, though the promise never settles", async () => {
    const controller = new AbortController();
    const reason = new RunInterruption('deadline', 'deadline of 10 ms reached');
    const raced = untilAborted(never(), controller.signal);
    controller.abort(reason);
    await expect(raced).rejects.toBe(reason);
  });

  it("keeps the abort's reason when the promise settles afterwards", async () => {
    const controller = new AbortController();
    const pending = deferred<string>();
    const raced = untilAborted(pending.promise, controller.signal);
    controller.abort('stopped');
    pending.resolve('late');
    await expect(raced).rejects.toBe('stopped');
  });

  it('does not reject later when the signal aborts after the promise settled', async () => {
    const controller = new AbortController();
    const raced = untilAborted(Promise.resolve('early'), controller.signal);
    await expect(raced).resolves.toBe('early');
    controller.abort('too late');
    await expect(raced).resolves.toBe('early');
  });

  it("rejects at once with an already-aborted signal's reason, even when the promise has resolved", async () => {
    const controller = new AbortController();
    const reason = new Error('cancelled before start');
    controller.abort(reason);
    await expect(untilAborted(Promise.resolve('value'), controller.signal)).rejects.toBe(reason);
    await expect(untilAborted(never(), controller.signal)).rejects.toBe(reason);
  });

  it('uses the DOMException reason of a bare abort()', async () => {
    const controller = new AbortController();
    const raced = untilAborted(never(), controller.signal);
    controller.abort();
    await expect(raced).rejects.toMatchObject({ name: 'AbortError' });
  });

  it('removes its abort listener once the promise resolves', async () => {
    const controller = new AbortController();
    const add = vi.spyOn(controller.signal, 'addEventListener');
    const remove = vi.spyOn(controller.signal, 'removeEventListener');
    await untilAborted(Promise.resolve(1), controller.signal);
    expect(add).toHaveBeenCalledTimes(1);
    expect(add.mock.calls[0]?.[0]).toBe('abort');
    expect(remove).toHaveBeenCalledTimes(1);
    expect(remove.mock.calls[0]?.slice(0, 2)).toEqual(add.mock.calls[0]?.slice(0, 2));
  });

  it('removes its abort listener once the promise rejects', async () => {
    const controller = new AbortController();
    const add = vi.spyOn(controller.signal, 'addEventListener');
    const remove = vi.spyOn(controller.signal, 'removeEventListener');
    await untilAborted(Promise.reject(new Error('boom')), controller.signal).catch(() => undefined);
    expect(remove).toHaveBeenCalledTimes(1);
    expect(remove.mock.calls[0]?.slice(0, 2)).toEqual(add.mock.calls[0]?.slice(0, 2));
  });

  it('leaves no listener behind after many settled races on one long-lived signal', async () => {
    const controller = new AbortController();
    const listeners = new Set<unknown>();
    const add = controller.signal.addEventListener.bind(controller.signal);
    const remove = controller.signal.removeEventListener.bind(controller.signal);
    vi.spyOn(controller.signal, 'addEventListener').mockImplementation((type, listener, options) => {
      listeners.add(listener);
      add(type, listener, options);
    });
    vi.spyOn(controller.signal, 'removeEventListener').mockImplementation((type, listener, options) => {
      listeners.delete(listener);
      remove(type, listener, options);
    });
    for (let index = 0; index < 50; index += 1) await untilAborted(Promise.resolve(index), controller.signal);
    expect(listeners.size).toBe(0);
  });

  it('does not touch the signal when it is already aborted', async () => {
    const controller = new AbortController();
    controller.abort('gone');
    const add = vi.spyOn(controller.signal, 'addEventListener');
    await untilAborted(Promise.resolve(1), controller.signal).catch(() => undefined);
    expect(add).not.toHaveBeenCalled();
  });
});

describe('interruptionOf', () => {
  it('returns the RunInterruption the signal was aborted with, as is', () => {
    const controller = new AbortController();
    const interruption = new RunInterruption('deadline', 'deadline of 5000 ms reached');
    controller.abort(interruption);
    expect(interruptionOf(controller.signal)).toBe(interruption);
  });

  it('turns a foreign reason into a cancellation carrying its text', () => {
    const controller = new AbortController();
    controller.abort('user pressed stop');
    const interruption = interruptionOf(controller.signal);
    expect(interruption).toBeInstanceOf(RunInterruption);
    expect(interruption.kind).toBe('cancelled');
    expect(interruption.message).toBe('user pressed stop');
  });

  it('describes a foreign Error or DOMException reason by its string form', () => {
    const withError = new AbortController();
    withError.abort(new TypeError('bad'));
    expect(interruptionOf(withError.signal)).toMatchObject({ kind: 'cancelled', message: 'TypeError: bad' });
    const bare = new AbortController();
    bare.abort();
    expect(interruptionOf(bare.signal)).toMatchObject({
      kind: 'cancelled',
      message: expect.stringContaining('AbortError'),
    });
  });

  it("says 'aborted' when the reason is null", () => {
    const controller = new AbortController();
    controller.abort(null);
    expect(interruptionOf(controller.signal)).toMatchObject({ kind: 'cancelled', message: 'aborted' });
  });
});

describe('RunInterruption', () => {
  it('is an Error named RunInterruption with its kind and message', () => {
    const interruption = new RunInterruption('cancelled', 'stop');
    expect(interruption).toBeInstanceOf(Error);
    expect(interruption).toMatchObject({ name: 'RunInterruption', kind: 'cancelled', message: 'stop' });
  });
});

describe('untilAborted with a signal aborted before the call', () => {
  it('leaves no unhandled rejection behind when the abandoned promise later rejects', async () => {
    const unhandled: unknown[] = [];
    const onUnhandled = (reason: unknown) => unhandled.push(reason);
    process.on('unhandledRejection', onUnhandled);
    try {
      const controller = new AbortController();
      controller.abort(new Error('stop'));
      let rejectLater: (error: Error) => void = () => undefined;
      const abandoned = new Promise<never>((_, reject) => (rejectLater = reject));
      await expect(untilAborted(abandoned, controller.signal)).rejects.toThrow('stop');
      rejectLater(new Error('late failure'));
      await new Promise((resolve) => setImmediate(resolve));
      expect(unhandled).toEqual([]);
    } finally {
      process.off('unhandledRejection', onUnhandled);
    }
  });
});
