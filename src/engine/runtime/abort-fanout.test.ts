import { getEventListeners } from 'node:events';
import { describe, expect, it } from 'vitest';
import { AbortFanout, LazySignal, RunAbort } from './abort-fanout.js';

describe('AbortFanout', () => {
  it('adds one listener to the signal however many wait on it', () => {
    const controller = new AbortController();
    const aborts = new AbortFanout(controller.signal);
    const forgets = Array.from({ length: 50 }, () => aborts.subscribe(() => undefined));
    expect(getEventListeners(controller.signal, 'abort')).toHaveLength(1);
    for (const forget of forgets) forget();
  });

  it('tells each waiter once, with the reason, and not the ones that were forgotten', () => {
    const controller = new AbortController();
    const aborts = new AbortFanout(controller.signal);
    const heard: unknown[] = [];
    aborts.subscribe((reason) => heard.push(['a', reason]));
    const forget = aborts.subscribe((reason) => heard.push(['b', reason]));
    forget();
    controller.abort('stop');
    controller.abort('again');
    expect(heard).toEqual([['a', 'stop']]);
  });

  it('keeps telling the others when one waiter throws', () => {
    const controller = new AbortController();
    const aborts = new AbortFanout(controller.signal);
    const heard: string[] = [];
    aborts.subscribe(() => {
      throw new Error('broken waiter');
    });
    aborts.subscribe(() => heard.push('second'));
    controller.abort();
    expect(heard).toEqual(['second']);
  });

  it('calls a waiter at once when the signal has already aborted', () => {
    const aborts = new AbortFanout(AbortSignal.abort('earlier'));
    const heard: unknown[] = [];
    aborts.subscribe((reason) => heard.push(reason));
    expect(heard).toEqual(['earlier']);
  });

  it('race settles with the promise, or rejects with the reason as soon as the signal aborts', async () => {
    const controller = new AbortController();
    const aborts = new AbortFanout(controller.signal);
    await expect(aborts.race(Promise.resolve(7))).resolves.toBe(7);
    await expect(aborts.race(Promise.reject(new Error('failed')))).rejects.toThrow('failed');
    const never = new Promise<never>(() => undefined);
    const raced = aborts.race(never);
    controller.abort(new Error('cancelled'));
    await expect(raced).rejects.toThrow('cancelled');
    await expect(aborts.race(Promise.reject(new Error('ignored')))).rejects.toThrow('cancelled');
  });
});

describe('LazySignal', () => {
  it('makes no signal until one is read, and a late read sees the abort and its first reason', () => {
    const lazy = new LazySignal();
    lazy.abort('first');
    lazy.abort('second');
    expect(lazy.aborted).toBe(true);
    expect(lazy.signal.aborted).toBe(true);
    expect(lazy.signal.reason).toBe('first');
  });

  it('aborts a signal already read', () => {
    const lazy = new LazySignal();
    const { signal } = lazy;
    expect(signal.aborted).toBe(false);
    lazy.abort('now');
    expect(signal.aborted).toBe(true);
    expect(signal.reason).toBe('now');
    expect(lazy.signal).toBe(signal);
  });
});

describe('AbortFanout.dispose', () => {
  it('takes its listener off the signal', () => {
    const controller = new AbortController();
    const aborts = new AbortFanout(controller.signal);
    aborts.subscribe(() => undefined);
    aborts.dispose();
    expect(getEventListeners(controller.signal, 'abort')).toHaveLength(0);
  });
});

describe('RunAbort', () => {
  it('tells its waiters, then the signal read before the abort, with the one reason; later aborts change nothing', () => {
    const run = new RunAbort();
    const heard: unknown[] = [];
    const { signal } = run;
    signal.addEventListener('abort', () => heard.push(['signal', signal.reason]));
    run.subscribe((reason) => heard.push(['waiter', reason, run.aborted]));
    const forget = run.subscribe((reason) => heard.push(['forgotten', reason]));
    forget();
    run.abort('stop');
    run.abort('again');
    expect(heard).toEqual([
      ['waiter', 'stop', true],
      ['signal', 'stop'],
    ]);
    expect(run.reason).toBe('stop');
    expect(run.signal).toBe(signal);
  });

  it('gives a signal first read after the abort already aborted, with its reason', () => {
    const run = new RunAbort();
    const reason = new Error('deadline');
    run.abort(reason);
    expect(run.signal.aborted).toBe(true);
    expect(run.signal.reason).toBe(reason);
    const heard: unknown[] = [];
    run.subscribe((late) => heard.push(late));
    expect(heard).toEqual([reason]);
  });

  it('aborts without a reason as an AbortController does: with an AbortError', () => {
    const run = new RunAbort();
    const controller = new AbortController();
    run.abort();
    controller.abort();
    expect(run.reason).toBeInstanceOf(DOMException);
    expect((run.reason as DOMException).name).toBe((controller.signal.reason as DOMException).name);
    expect(run.signal.reason).toBe(run.reason);
  });

  it('race settles with the promise, or rejects with the reason at the abort, without a signal made', async () => {
    const made = countAbortControllers();
    try {
      const run = new RunAbort();
      await expect(run.race(Promise.resolve(7))).resolves.toBe(7);
      const raced = run.race(new Promise<never>(() => undefined));
      run.abort(new Error('cancelled'));
      await expect(raced).rejects.toThrow('cancelled');
      await expect(run.race(Promise.reject(new Error('ignored')))).rejects.toThrow('cancelled');
      expect(made.count).toBe(0);
    } finally {
      made.restore();
    }
  });
});

/** Counts `new AbortController()` until `restore`. */
function countAbortControllers(): { readonly count: number; restore(): void } {
  const Original = globalThis.AbortController;
  let count = 0;
  globalThis.AbortController = class extends Original {
    constructor() {
      super();
      count++;
    }
  };
  return {
    get count() {
      return count;
    },
    restore: () => {
      globalThis.AbortController = Original;
    },
  };
}

describe('AbortWaiters: watchers, and the order waiters hear in', () => {
  it('tells function waiters and watcher objects in the order they came, after any were forgotten or re-added', () => {
    const run = new RunAbort();
    const heard: string[] = [];
    const watcher = (name: string) => ({ onAbort: (reason: unknown) => heard.push(`${name} ${String(reason)}`) });
    const a = watcher('a');
    const b = watcher('b');
    run.watch(a);
    const forgetF = run.subscribe((reason) => heard.push(`f ${String(reason)}`));
    run.watch(b);
    run.unwatch(a);
    // The oldest gone while later ones wait: a new waiter comes after them, not before.
    const c = watcher('c');
    run.watch(c);
    run.watch(c);
    forgetF();
    const d = watcher('d');
    run.watch(d);
    run.unwatch(d);
    run.abort('stop');
    expect(heard).toEqual(['b stop', 'c stop']);
    // Told once; a watcher after the abort hears at once.
    run.abort('again');
    run.watch(watcher('late'));
    expect(heard).toEqual(['b stop', 'c stop', 'late stop']);
  });

  it('makes no Set for one waiter at a time: a run adds and forgets one on every model call', () => {
    // A Set that one waiter is added to and deleted from, call after call, makes itself a new table every
    // other call, and a model call is waited on long enough for it to be promoted: a lone waiter is kept
    // in a field instead. Counted by the Sets constructed meanwhile.
    let made = 0;
    const Original = globalThis.Set;
    globalThis.Set = class CountedSet<T> extends Original<T> {
      constructor(values?: Iterable<T> | null) {
        super(values);
        made++;
      }
    } as SetConstructor;
    try {
      const run = new RunAbort();
      const watcher = { onAbort: () => undefined };
      for (let call = 0; call < 10; call++) {
        run.watch(watcher);
        run.unwatch(watcher);
        run.subscribe(() => undefined)();
      }
      expect(made).toBe(0);
      // A second waiter while the first waits is what needs one.
      run.watch(watcher);
      run.subscribe(() => undefined);
      expect(made).toBe(1);
    } finally {
      globalThis.Set = Original;
    }
  });
});
