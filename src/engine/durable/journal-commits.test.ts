import { afterEach, beforeEach, describe, expect, it, vi } from 'vitest';
import { memoryStore } from '../store/memory-store.js';
import { JournalCommits } from './journal-commits.js';

const lease = () => ({ owner: 'me', until: Number.MAX_SAFE_INTEGER });

describe('JournalCommits in a model call wait', () => {
  it('keeps a snapshot that cannot be taken as the write failure, not an uncaught exception', async () => {
    const commits = new JournalCommits(memoryStore(), 'r', lease as never, {}, false);
    commits.beforeWaitCommit = () => {
      throw new TypeError('Converting circular structure to JSON');
    };
    const uncaught: unknown[] = [];
    const onUncaught = (error: unknown) => uncaught.push(error);
    process.on('uncaughtException', onUncaught);
    try {
      const reply = new Promise<string>((resolve) => setTimeout(() => resolve('answer'), 20));
      await expect(commits.meanwhile(reply, true)).resolves.toBe('answer');
    } finally {
      process.off('uncaughtException', onUncaught);
    }
    expect(uncaught).toEqual([]);
    expect(commits.writeFailure).toBeInstanceOf(TypeError);
  });

  it('appends nothing once a commit failed: a later flush rejects with that failure', async () => {
    const store = memoryStore();
    let appends = 0;
    const failing = {
      ...store,
      append: async () => {
        appends += 1;
        throw new Error('connection reset by peer');
      },
    };
    const commits = new JournalCommits(failing, 'r', lease as never, {}, false);
    const event = {
      schemaVersion: 1,
      kind: 'intent',
      runId: 'r',
      seq: 1,
      key: 'k1',
      tool: 'charge',
      args: null,
    } as never;
    commits.queue(event);
    await expect(commits.flush()).rejects.toThrow('connection reset by peer');
    // An intent queued after the failure (a reply that came while the failed commit was out) is never appended.
    commits.queue({ ...(event as object), seq: 2, key: 'k2' } as never);
    await expect(commits.flush()).rejects.toThrow('connection reset by peer');
    expect(appends).toBe(1);
  });
});

describe('JournalCommits: the control a grouped step takes', () => {
  const intent = (seq: number) =>
    ({ schemaVersion: 1, kind: 'intent', runId: 'r', seq, key: `k${seq}`, tool: 'charge', args: null }) as never;
  /** performance.now() as the test sets it (JournalCommits reads the monotonic clock through it). */
  let now = 1_000;
  beforeEach(() => {
    now = 1_000;
    vi.spyOn(performance, 'now').mockImplementation(() => now);
  });
  afterEach(() => vi.restoreAllMocks());

  it('is the control the last commit found, while that commit is younger than maxUncommittedMs', async () => {
    const store = memoryStore();
    await store.createRun('r', '{}', lease());
    const commits = new JournalCommits(store, 'r', lease as never, { maxUncommittedMs: 40 }, false);
    expect(commits.recentControl()).toBeNull();
    commits.queue(intent(1));
    await commits.flush();
    expect(commits.recentControl()).toEqual({ paused: null, cancelRequested: false });
    // Set after that commit: not in what it found.
    await store.setPaused('incident');
    now += 39;
    expect(commits.recentControl()).toEqual({ paused: null, cancelRequested: false });
    commits.queue(intent(2));
    await commits.flush();
    expect(commits.recentControl()).toEqual({ paused: 'incident', cancelRequested: false });
    // As old as the bound: none (the journal reads the control then).
    now += 40;
    expect(commits.recentControl()).toBeNull();
  });

  it('counts its age from when the commit asked for it, not from when the commit ended', async () => {
    const store = memoryStore();
    await store.createRun('r', '{}', lease());
    // A commit whose round trip (an fsync, a network) takes 30 ms after the control is read.
    const slow = {
      ...store,
      append: async (...args: Parameters<typeof store.append>) => {
        const answer = await store.append(...args);
        now += 30;
        return answer;
      },
    };
    const commits = new JournalCommits(slow, 'r', lease as never, { maxUncommittedMs: 40 }, false);
    commits.queue(intent(1));
    await commits.flush();
    now += 9;
    expect(commits.recentControl()).not.toBeNull();
    now += 1;
    expect(commits.recentControl()).toBeNull();
  });

  it('is none while a later commit is under way, and a control the journal read itself stands after it', async () => {
    const store = memoryStore();
    await store.createRun('r', '{}', lease());
    let release: () => void = () => undefined;
    const held = new Promise<void>((resolve) => (release = resolve));
    let hold = false;
    const slow = {
      ...store,
      append: async (...args: Parameters<typeof store.append>) => {
        if (hold) await held;
        return store.append(...args);
      },
    };
    const commits = new JournalCommits(slow, 'r', lease as never, { maxUncommittedMs: 40 }, false);
    commits.queue(intent(1));
    await commits.flush();
    expect(commits.recentControl()).not.toBeNull();
    hold = true;
    commits.queue(intent(2));
    const second = commits.flush();
    await Promise.resolve();
    // The first commit's answer is older than the start of the one under way: not taken.
    expect(commits.recentControl()).toBeNull();
    // A read asked for after that commit began (the journal waited on the slow store meanwhile) stands, and the
    // commit's own answer, asked for before it, does not replace it when the commit ends.
    now += 1;
    commits.noteControl({ paused: 'read meanwhile', cancelRequested: false }, now, commits.started);
    expect(commits.recentControl()).toEqual({ paused: 'read meanwhile', cancelRequested: false });
    release();
    await second;
    expect(commits.recentControl()).toEqual({ paused: 'read meanwhile', cancelRequested: false });
    // A read asked for before a commit that then answers: the commit's answer is the newer.
    now += 1;
    commits.noteControl({ paused: 'older read', cancelRequested: false }, now, commits.started);
    now += 1;
    hold = false;
    commits.queue(intent(3));
    await commits.flush();
    expect(commits.recentControl()).toEqual({ paused: null, cancelRequested: false });
  });

  it('counts the model call under way when a commit starts in its wait (its reply is not in that commit)', async () => {
    const store = memoryStore();
    await store.createRun('r', '{}', lease());
    const commits = new JournalCommits(
      store,
      'r',
      lease as never,
      { maxUncommittedSteps: 2, maxUncommittedMs: Infinity },
      false,
    );
    commits.queue(intent(1));
    await commits.flush();
    // Step A: grouped, its call begins; what waits is committed while the model works (the timer in `meanwhile`).
    expect(commits.mayWait()).toBe(true);
    commits.callBegins();
    commits.queue(intent(2));
    const started = commits.started;
    await commits.meanwhile(new Promise((resolve) => setTimeout(() => resolve('reply A'), 5)));
    expect(commits.started).toBe(started + 1);
    // Step B may be grouped (A's reply is the one uncommitted call); step C may not: with B's, two are.
    expect(commits.mayWait()).toBe(true);
    commits.callBegins();
    expect(commits.mayWait()).toBe(false);
  });

  it('is none when the store’s append does not answer the control, or grouping is off', async () => {
    const store = memoryStore();
    await store.createRun('r', '{}', lease());
    const silent = {
      ...store,
      append: async (...args: Parameters<typeof store.append>) => void (await store.append(...args)),
    };
    const unanswered = new JournalCommits(silent, 'r', lease as never, { maxUncommittedMs: 60_000 }, false);
    unanswered.queue(intent(1));
    await unanswered.flush();
    expect(unanswered.recentControl()).toBeNull();
    const ungrouped = new JournalCommits(store, 'r', lease as never, {}, false);
    ungrouped.queue(intent(2));
    await ungrouped.flush();
    expect(ungrouped.recentControl()).toBeNull();
  });
});
