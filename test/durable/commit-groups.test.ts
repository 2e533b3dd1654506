/**
 * Commits grouped across steps (`durable.maxUncommittedSteps`, `durable.maxUncommittedMs`), on a real SQLite
 * file: steps whose tool calls are all idempotent share one commit, at most the bound's replies left
 * uncommitted; a write's intent and outcome, an evaluation and the stop are committed as always; the time
 * bound commits before every call of a model slower than it; a grouped step reads no control of its own, so a pause
 * set through another handle is seen at the group's next commit (before the next step when nothing is grouped);
 * only the newest of a group's snapshots is written; bad bounds are refused.
 */
import { afterAll, describe, expect, it } from 'vitest';
import { createLoop, DEFAULT_DURABLE, evaluators, type Model, type Store } from 'loopstate';
import { modelError, reply, scriptedModel, virtualClock } from 'loopstate/testing';
import { sqliteStore } from 'loopstate/sqlite';
import { configError } from '../support/config-error.js';
import { commitsPerStep, counted, groupedLoop, kindsIn, removeScratch, type Round } from './counted-store.js';

afterAll(removeScratch);

const reads = (steps: number) => Array.from({ length: steps }, (): Round => ['lookup']);
// Only the step bound decides, unless a test says otherwise.
const noTimeBound = { maxUncommittedMs: Infinity };

/** The most model calls in a row with no commit before any of them. */
function longestUncommitted(counts: ReturnType<typeof counted>): number {
  let longest = 0;
  let uncommitted = 0;
  for (const commits of commitsPerStep(counts)) {
    uncommitted = commits === 0 ? uncommitted + 1 : 0;
    longest = Math.max(longest, uncommitted);
  }
  return longest;
}

/**
 * A run of eight read steps that another handle on the file pauses during step 2's model call (a paused run looks
 * every 5 ms). Once the run has looked `looks` times, `whilePaused` runs and the pause is lifted. Returns the run's
 * result and the steps whose model calls began while it was paused.
 */
async function pausedDuringStep2(
  runId: string,
  grouping: { maxUncommittedSteps: number; maxUncommittedMs: number },
  looks: number,
  whilePaused: (counts: ReturnType<typeof counted>, other: Store) => Promise<void> = async () => {},
) {
  const counts = counted(false, 5);
  const other = sqliteStore({ path: counts.path });
  let paused = false;
  let lifted = false;
  const callsAfterPause: number[] = [];
  const loop = groupedLoop(
    counts,
    reads(8),
    async (step) => {
      if (paused && !lifted) callsAfterPause.push(step);
      if (step !== 2) return;
      await other.setPaused('incident');
      paused = true;
    },
    1_000,
    grouping,
  );
  const running = loop.run({ goal: 'read', runId });
  while (!paused || counts.readControls < looks) await new Promise((resolve) => setTimeout(resolve, 5));
  lifted = true;
  await whilePaused(counts, other);
  await other.setPaused(null);
  const result = await running;
  await other.close();
  await counts.store.close();
  return { counts, result, callsAfterPause };
}

describe('commits grouped across steps of idempotent calls only', () => {
  it.each([
    [2, [0, 1, 0, 1, 0, 1, 0, 1, 0, 1, 0, 1]],
    [4, [0, 0, 0, 1, 0, 0, 0, 1, 0, 0, 0, 1]],
    [16, [0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0]],
  ])(
    'maxUncommittedSteps %i: a commit before every that-many model calls, no control read before the others',
    async (maxUncommittedSteps, expected) => {
      const counts = counted();
      const result = await groupedLoop(counts, reads(12), undefined, 1_000, {
        maxUncommittedSteps,
        ...noTimeBound,
      }).run({ goal: 'read', runId: 'grouped' });
      expect(result.stopReason).toBe('completed');
      expect(result.steps).toBe(13);
      // The run's first commit (its start) is before its first model call, whatever the bound.
      expect(counts.appendsAtModelCall[0]).toBe(1);
      expect(commitsPerStep(counts)).toEqual(expected);
      // A grouped step takes the control its group's last commit found (the commit's own read): none read apart.
      expect(counts.readControls).toBe(0);
      // Everything is in the journal at the end (the evaluation's commit took the last group), nothing twice.
      const kinds = await kindsIn(counts.store, 'grouped');
      expect(kinds.filter((kind) => kind === 'event').length).toBeGreaterThanOrEqual(2 * 13);
      expect(kinds.filter((kind) => kind === 'model' || kind === 'tool-result')).toEqual([]);
      const resumed = await groupedLoop(counts, reads(12)).resume('grouped');
      expect(resumed.stopReason).toBe('completed');
      expect(resumed.steps).toBe(13);
      await counts.store.close();
    },
  );

  it('by default (no durable options) an instant model’s steps are grouped: fewer commits than steps', async () => {
    expect(DEFAULT_DURABLE).toMatchObject({ maxUncommittedSteps: 16, maxUncommittedMs: 20 });
    const counts = counted();
    const result = await groupedLoop(counts, reads(40)).run({ goal: 'read', runId: 'defaults' });
    expect(result.stopReason).toBe('completed');
    // Not an exact count: the 20 ms bound depends on how fast this machine runs the steps. At most one
    // commit a step, and never more than 16 model calls uncommitted.
    expect(Math.max(...commitsPerStep(counts))).toBeLessThanOrEqual(1);
    expect(longestUncommitted(counts)).toBeLessThan(16);
    await counts.store.close();
  });

  it('a write in the middle of a group: its intent is committed before it runs (with the group), its outcome before the next model call', async () => {
    const counts = counted();
    const rounds: Round[] = [['lookup'], ['lookup'], ['charge'], ['lookup'], ['lookup'], ['lookup', 'charge']];
    const result = await groupedLoop(counts, rounds, undefined, 1_000, {
      maxUncommittedSteps: 16,
      ...noTimeBound,
    }).run({ goal: 'mixed', runId: 'mixed' });
    expect(result.stopReason).toBe('completed');
    // Steps 1–2 wait; step 3 commits its reply with the intent, then its outcome before the next call;
    // steps 4–5 wait; step 6's write commits the intent, the read's outcome while the charge runs, the rest.
    expect(commitsPerStep(counts)).toEqual([0, 0, 2, 0, 0, 3]);
    const intents = counts.appends.filter((kinds) => kinds.includes('intent'));
    expect(intents).toHaveLength(2);
    // The first intent's commit holds the two grouped steps before it (two events each) and its reply's event.
    expect(intents[0]).toEqual(['event', 'event', 'event', 'event', 'event', 'intent']);
    // Each charge ran after its intent's commit.
    expect(counts.appendsAtCharge).toHaveLength(2);
    for (const at of counts.appendsAtCharge) expect(counts.appends[at - 1]).toContain('intent');
    await counts.store.close();
  });

  it('an evaluation is committed before it runs and its outcome before the next model call', async () => {
    const counts = counted();
    let evaluations = 0;
    const result = await groupedLoop(counts, reads(3), undefined, 1_000, { maxUncommittedSteps: 16, ...noTimeBound }, [
      evaluators.rule(() => ++evaluations > 1, 'look again'),
    ]).run({ goal: 'read', runId: 'evaluated' });
    expect(result.stopReason).toBe('completed');
    expect(evaluations).toBe(2);
    // Calls 1–3 wait; the evaluation of the answer commits before it, its rejection before the model is asked again.
    expect(commitsPerStep(counts)).toEqual([0, 0, 0, 2]);
    await counts.store.close();
  });

  it('maxUncommittedMs: a model slower than the bound has a commit before every call', async () => {
    const counts = counted();
    const slow = async () => new Promise<void>((resolve) => setTimeout(resolve, 5));
    const result = await groupedLoop(counts, reads(6), slow, 1_000, {
      maxUncommittedSteps: 16,
      maxUncommittedMs: 2,
    }).run({ goal: 'read', runId: 'slow' });
    expect(result.stopReason).toBe('completed');
    // A commit before every call. A call's wait may add one of its own, holding only the chunks of a snapshot taken
    // there (see journal-snapshots.ts's snapshotInWait), never more.
    const perStep = commitsPerStep(counts);
    expect(perStep.map((commits) => Math.min(commits, 1))).toEqual([1, 1, 1, 1, 1, 1]);
    expect(Math.max(...perStep)).toBeLessThanOrEqual(2);
    const chunksOnly = counts.appends.filter((kinds) =>
      kinds.every((kind) => kind === 'trace' || kind === 'transcript'),
    );
    expect(chunksOnly.length).toBeGreaterThanOrEqual(perStep.reduce((extra, commits) => extra + commits - 1, 0));
    await counts.store.close();
  });

  it('maxUncommittedMs 0 commits before every model call whatever the step bound', async () => {
    const counts = counted();
    await groupedLoop(counts, reads(6), undefined, 1_000, { maxUncommittedSteps: 16, maxUncommittedMs: 0 }).run({
      goal: 'read',
      runId: 'zero',
    });
    expect(commitsPerStep(counts)).toEqual([1, 1, 1, 1, 1, 1]);
    await counts.store.close();
  });

  it.each([
    // Nothing grouped: a commit before every model call, which finds the pause before the next step.
    [1, []],
    // Groups of four (commits before the model calls of steps 4 and 8): the pause, set during step 2's call, is found
    // by the commit before step 4's call; step 3, grouped, made its call on the control of the commit before step 0.
    [4, [3]],
  ])(
    'maxUncommittedSteps %i: a pause set through another handle on the file during a step is seen at the next commit',
    async (maxUncommittedSteps, callsBeforeSeen) => {
      // Lifted once the run has looked again (and waited) a few times: it polls with readControl while paused.
      const { result, callsAfterPause } = await pausedDuringStep2(
        'paused',
        { maxUncommittedSteps, ...noTimeBound },
        3,
        async (_counts, other) => {
          // The group held back when the pause was seen is committed before the run waits: the journal (as another
          // process reads it) holds every step so far, so a restart during the pause repeats none of them.
          const events = (await other.readJournal('paused', 0)).filter((row) => row.kind === 'event').length;
          expect(events).toBeGreaterThanOrEqual(2 * (3 + callsBeforeSeen.length));
        },
      );
      expect(result.stopReason).toBe('completed');
      expect(result.steps).toBe(9);
      expect(callsAfterPause).toEqual(callsBeforeSeen);
    },
  );

  // With no time bound: under a 20 ms bound a pause that outlasts it leaves nothing grouped after it anyway.
  it('once a pause is lifted, the steps grouped after it take the look that saw it lifted', async () => {
    let readsBefore = 0;
    let snapshotsBefore = 0;
    const { counts, result } = await pausedDuringStep2(
      'lifted',
      { maxUncommittedSteps: 4, ...noTimeBound },
      2,
      async (seen) => {
        readsBefore = seen.readControls;
        snapshotsBefore = seen.snapshots.length;
      },
    );
    expect(result.stopReason).toBe('completed');
    // One look sees the pause lifted; no later step takes the commit's "paused" again (a second wait, a second
    // snapshot at a pause).
    expect(counts.readControls - readsBefore).toBe(1);
    expect(counts.snapshots.length - snapshotsBefore).toBe(0);
  });

  it.each([1, 2])(
    'maxUncommittedSteps %i: the bound holds after a pause (the call the pause held counts toward the next group)',
    async (maxUncommittedSteps) => {
      const { counts, result } = await pausedDuringStep2('bound', { maxUncommittedSteps, ...noTimeBound }, 2);
      expect(result.stopReason).toBe('completed');
      // Never `maxUncommittedSteps` model calls in a row without a commit before one of them.
      expect(longestUncommitted(counts)).toBeLessThan(maxUncommittedSteps);
    },
  );

  it('a store whose append answers no control is read once after each commit, the grouped steps taking that', async () => {
    const counts = counted(true);
    const result = await groupedLoop(counts, reads(12), undefined, 1_000, {
      maxUncommittedSteps: 4,
      ...noTimeBound,
    }).run({ goal: 'read', runId: 'silent' });
    expect(result.stopReason).toBe('completed');
    const perStep = commitsPerStep(counts);
    expect(perStep).toEqual([0, 0, 0, 1, 0, 0, 0, 1, 0, 0, 0, 1]);
    // A read before the first model call and after each of the three group commits (which said nothing), and one
    // before the evaluation: the grouped steps in between take the latest.
    expect(counts.readControls).toBe(1 + 3 + 1);
    await counts.store.close();
  });

  it('a failed model call counts toward the bound: at 1, every model call has a commit before it, after a failure too', async () => {
    const counts = counted();
    const script = scriptedModel([reply('a done'), modelError({ kind: 'timeout' }), reply('c done')]);
    const model: Model = {
      id: 'tasks',
      generate(request) {
        counts.appendsAtModelCall.push(counts.appends.length);
        return script.generate(request);
      },
    };
    const loop = createLoop({
      model,
      store: counts.store,
      clock: virtualClock(),
      durable: { maxUncommittedSteps: 1, ...noTimeBound },
      limits: { maxTransportAttempts: 1 },
      tasks: [
        { id: 'a', prompt: 'A' },
        { id: 'b', prompt: 'B', onFailure: 'continue' },
        { id: 'c', prompt: 'C' },
      ],
    });
    const result = await loop.run({ goal: 'three tasks', runId: 'failed-call' });
    expect(counts.appendsAtModelCall).toHaveLength(3);
    // Task b's failed call (its model.failed and the task's failure) is committed before task c's call: a crash
    // during that call must not ask b's model again (it might answer, and the resumed run would differ).
    for (const commits of commitsPerStep(counts)) expect(commits).toBeGreaterThanOrEqual(1);
    expect(result.stopReason).not.toBe('fatal_error');
    await counts.store.close();
  });

  it('a model call that does not answer at once: the group waiting for a commit is committed while it works', async () => {
    const counts = counted();
    let release: () => void = () => undefined;
    const gate = new Promise<void>((resolve) => (release = resolve));
    const loop = groupedLoop(
      counts,
      reads(6),
      async (step) => {
        if (step === 4) await gate;
      },
      1_000,
      { maxUncommittedSteps: 16, ...noTimeBound },
    );
    const running = loop.run({ goal: 'read', runId: 'hung' });
    const tick = () => new Promise((resolve) => setTimeout(resolve, 5));
    while (counts.appendsAtModelCall.length < 5) await tick();
    // Calls 1–4 were grouped (no commit before them); call 5 is out and does not answer.
    expect(commitsPerStep(counts)).toEqual([0, 0, 0, 0]);
    // The commits made before call 5 began (the one made meanwhile may already have come: the loop above ticks).
    const atCall = counts.appendsAtModelCall[4]!;
    for (let waited = 0; waited < 400 && counts.appends.length === atCall; waited++) await tick();
    expect(counts.appends.length).toBe(atCall + 1);
    // The journal holds every step before the call out: a crash now would repeat none of them.
    const events = (await kindsIn(counts.store, 'hung')).filter((kind) => kind === 'event').length;
    expect(events).toBeGreaterThanOrEqual(1 + 2 * 4);
    release();
    const result = await running;
    expect(result.stopReason).toBe('completed');
    expect(result.steps).toBe(7);
    await counts.store.close();
  });

  it('snapshots taken inside a group: only the newest is written, after the commit that holds its chunks', async () => {
    const counts = counted();
    const result = await groupedLoop(counts, reads(12), undefined, 3, { maxUncommittedSteps: 8, ...noTimeBound }).run({
      goal: 'read',
      runId: 'snapshots',
    });
    expect(result.stopReason).toBe('completed');
    // A snapshot every 3 events (25 events): 8 taken; one written per commit that had one waiting.
    expect(counts.snapshots.length).toBeGreaterThanOrEqual(2);
    expect(counts.snapshots.length).toBeLessThanOrEqual(counts.appends.length);
    for (const snapshot of counts.snapshots) {
      expect(snapshot.committed).toContain(snapshot.seq);
      expect(snapshot.committed).toContain(snapshot.seq + 1);
    }
    const resumed = await groupedLoop(counts, reads(12)).resume('snapshots');
    expect(resumed.steps).toBe(13);
    await counts.store.close();
  });
});

describe('the bounds in config', () => {
  const model: Model = {
    id: 'm',
    generate: async () => ({ text: 'x', toolCalls: [], usage: { inputTokens: 1, outputTokens: 1 } }),
  };
  it.each([
    [{ maxUncommittedSteps: -1 }, 'durable.maxUncommittedSteps'],
    [{ maxUncommittedSteps: 1.5 }, 'durable.maxUncommittedSteps'],
    [{ maxUncommittedSteps: Infinity }, 'durable.maxUncommittedSteps'],
    [{ maxUncommittedSteps: '4' }, 'durable.maxUncommittedSteps'],
    [{ maxUncommittedMs: -1 }, 'durable.maxUncommittedMs'],
    [{ maxUncommittedMs: Number.NaN }, 'durable.maxUncommittedMs'],
    [{ maxUncommittedMs: '20' }, 'durable.maxUncommittedMs'],
  ])('refuses %j naming %s', (durable, path) => {
    const error = configError(() => createLoop({ model, store: sqliteStore({ path: ':memory:' }), durable } as never));
    expect(error.issues.map((issue) => issue.path)).toEqual([path]);
  });

  it('takes 0 and Infinity (no time bound), and undefined as the default', () => {
    for (const durable of [
      { maxUncommittedSteps: 0, maxUncommittedMs: 0 },
      { maxUncommittedMs: Infinity },
      { maxUncommittedSteps: undefined, maxUncommittedMs: undefined },
    ])
      expect(() => createLoop({ model, durable })).not.toThrow();
  });
});
