/**
 * Contract checks on snapshots, approvals, the cancel and pause flags and ids: the records a resume
 * starts from, and the ones a person's decision and an operator's kill switch go through.
 */
import type { RunControl, StoreRow } from '../../contracts/store.js';
import { call, describe, expectConflict, expectEqual, fail, type CheckContext } from './expectations.js';
import { createdRun, eventRow, readJournal, readRun, storeRowsOf, type ContractCheckBody } from './journal-checks.js';

const snapshotRow = (seq: number): StoreRow => ({ seq, kind: 'snapshot', body: `{"snapshotAt":${seq}}` });
const latestSnapshot = async (context: CheckContext, runId: string) => {
  const row = await call(context, `latestSnapshot(${JSON.stringify(runId)})`, () =>
    context.store.latestSnapshot(runId),
  );
  return row === null ? null : storeRowsOf([row])[0];
};

/** Names an object literal inherits: a store that keys records by a plain object answers for them. */
const PROTOTYPE_IDS = ['constructor', '__proto__', 'toString', 'hasOwnProperty', 'valueOf', 'isPrototypeOf'];

export const recordChecks: ContractCheckBody[] = [
  {
    name: 'snapshots: writeSnapshot then latestSnapshot gives the one with the highest seq',
    async body(context) {
      const { store } = context;
      const lease = await createdRun(context, 'run-s');
      expectEqual(context, 'latestSnapshot of a run without one', await latestSnapshot(context, 'run-s'), null);
      await call(context, 'writeSnapshot at seq 5', () => store.writeSnapshot('run-s', snapshotRow(5), lease));
      expectEqual(
        context,
        'latestSnapshot after a snapshot at seq 5',
        await latestSnapshot(context, 'run-s'),
        snapshotRow(5),
      );
      await call(context, 'writeSnapshot at seq 9', () => store.writeSnapshot('run-s', snapshotRow(9), lease));
      expectEqual(
        context,
        'latestSnapshot after snapshots at seqs 5, 9',
        await latestSnapshot(context, 'run-s'),
        snapshotRow(9),
      );
      await call(context, 'writeSnapshot at seq 7 (older than the latest)', () =>
        store.writeSnapshot('run-s', snapshotRow(7), lease),
      );
      expectEqual(
        context,
        'latestSnapshot after snapshots at seqs 5, 9, then 7',
        await latestSnapshot(context, 'run-s'),
        snapshotRow(9),
      );
      await createdRun(context, 'run-s2', 'owner-b');
      expectEqual(
        context,
        "latestSnapshot of another run (a run's snapshot is its own)",
        await latestSnapshot(context, 'run-s2'),
        null,
      );
      expectEqual(
        context,
        'latestSnapshot of a run that does not exist',
        await latestSnapshot(context, 'run-missing'),
        null,
      );
    },
  },
  {
    name: 'approvals: of two resumes deciding one call differently, exactly one decision is recorded',
    async body(context) {
      const { store, now } = context;
      const a = await createdRun(context, 'run-a');
      await call(context, 'append of the steps before the stop', () =>
        store.append('run-a', [eventRow(1), eventRow(2), eventRow(3)], a),
      );
      // A stop for approval: the run body names each waiting call with its tool and its arguments' hash.
      const waiting = JSON.stringify({
        state: 'waiting',
        waitingSeq: 3,
        pendingApprovals: [{ callId: '__proto__', tool: 'refund', argumentsHash: 'a3f1c2', expiresAt: null }],
      });
      await call(context, 'append of the stop for approval (no rows, a run body)', () =>
        store.append('run-a', [], a, waiting),
      );
      await call(context, 'releaseLease by the process that stopped', () => store.releaseLease('run-a', 'owner-a'));
      expectEqual(context, 'the waiting run body as read back', (await readRun(context, 'run-a'))?.body, waiting);
      const resumes = [
        {
          lease: { owner: 'resume-approve', until: now + 30_000 },
          decision: { tool: 'refund', argumentsHash: 'a3f1c2', approve: true },
        },
        {
          lease: { owner: 'resume-reject', until: now + 30_000 },
          decision: { tool: 'refund', argumentsHash: 'a3f1c2', approve: false, reason: 'over the limit' },
        },
      ];
      // Keyed by the call id as the model sent it: `__proto__` must stay an own key of the stored text.
      const decisionRow = (decision: object) =>
        eventRow(4, `{"kind":"event","approvals":{"__proto__":${JSON.stringify(decision)}}}`);
      const took = await call(context, 'acquireLease by two resumes at once', () =>
        Promise.all(resumes.map(({ lease }) => store.acquireLease('run-a', lease, now))),
      );
      expectEqual(
        context,
        'acquireLease results of two resumes racing for the waiting run',
        took.filter(Boolean).length,
        1,
      );
      const winner = took.indexOf(true);
      const [recorded, lost] = [resumes[winner]!, resumes[1 - winner]!];
      const decided = (owner: string) => JSON.stringify({ state: 'running', decidedCalls: ['__proto__'], by: owner });
      // The loser writes first, as a process would that still thinks it holds the run: it must be refused.
      await expectConflict(
        context,
        `append of the decision by ${lost.lease.owner}, which lost the race`,
        () => store.append('run-a', [decisionRow(lost.decision)], lost.lease, decided(lost.lease.owner)),
        'run-a',
      );
      await call(context, `append of the decision by ${recorded.lease.owner}, which holds the lease`, () =>
        store.append('run-a', [decisionRow(recorded.decision)], recorded.lease, decided(recorded.lease.owner)),
      );
      expectEqual(
        context,
        "the journal after both decisions were written (only the holder's)",
        await readJournal(context, 'run-a', 3),
        [decisionRow(recorded.decision)],
      );
      expectEqual(
        context,
        'the run body after both decisions were written',
        (await readRun(context, 'run-a'))?.body,
        decided(recorded.lease.owner),
      );
    },
  },
  {
    name: 'ids: Object.prototype member names work as run, call and tenant ids',
    async body(context) {
      const { store, now } = context;
      for (const id of PROTOTYPE_IDS) {
        const quoted = JSON.stringify(id);
        expectEqual(context, `readRun(${quoted}) on an empty store`, await readRun(context, id), null);
        expectEqual(context, `readJournal(${quoted}) on an empty store`, await readJournal(context, id, 0), []);
        expectEqual(context, `latestSnapshot(${quoted}) on an empty store`, await latestSnapshot(context, id), null);
        expectEqual(
          context,
          `readLedger(${quoted}) on an empty store`,
          await call(context, `readLedger(${quoted})`, () => store.readLedger(id)),
          null,
        );
        expectEqual(
          context,
          `acquireLease(${quoted}) on an empty store`,
          await call(context, `acquireLease(${quoted})`, () =>
            store.acquireLease(id, { owner: 'owner-x', until: now + 1 }, now),
          ),
          false,
        );
        expectEqual(
          context,
          `requestCancel(${quoted}) on an empty store`,
          await call(context, `requestCancel(${quoted})`, () => store.requestCancel(id)),
          false,
        );
        expectEqual(
          context,
          `readControl(${quoted}).cancelRequested on an empty store`,
          (await call(context, `readControl(${quoted})`, () => store.readControl(id))).cancelRequested,
          false,
        );
      }
      // Four get records; the last two stay absent, and must still read as absent beside them.
      const written = PROTOTYPE_IDS.slice(0, 4);
      for (const id of written) {
        const lease = await createdRun(context, id, `owner-${id}`, JSON.stringify({ runId: id }));
        const decision = `{"approvals":{${JSON.stringify(id)}:{"approve":true}}}`;
        await call(context, `append to run ${JSON.stringify(id)}`, () =>
          store.append(id, [eventRow(1, decision)], lease),
        );
        await call(context, `writeSnapshot of run ${JSON.stringify(id)}`, () =>
          store.writeSnapshot(id, { seq: 1, kind: 'snapshot', body: JSON.stringify({ of: id }) }, lease),
        );
        expectEqual(
          context,
          `writeLedger(${JSON.stringify(id)}) of a new tenant`,
          await call(context, 'writeLedger', () => store.writeLedger(id, JSON.stringify({ tenant: id }), null)),
          true,
        );
      }
      for (const id of written) {
        const quoted = JSON.stringify(id);
        expectEqual(
          context,
          `readRun(${quoted}) of its own record`,
          (await readRun(context, id))?.body,
          JSON.stringify({ runId: id }),
        );
        expectEqual(context, `readJournal(${quoted})`, await readJournal(context, id, 0), [
          eventRow(1, `{"approvals":{${quoted}:{"approve":true}}}`),
        ]);
        expectEqual(
          context,
          `latestSnapshot(${quoted})`,
          (await latestSnapshot(context, id))?.body,
          JSON.stringify({ of: id }),
        );
        expectEqual(
          context,
          `readLedger(${quoted})`,
          (await call(context, 'readLedger', () => store.readLedger(id)))?.body,
          JSON.stringify({ tenant: id }),
        );
      }
      for (const id of PROTOTYPE_IDS.slice(4)) {
        expectEqual(
          context,
          `readRun(${JSON.stringify(id)}) beside runs named after other prototype members`,
          await readRun(context, id),
          null,
        );
        expectEqual(
          context,
          `readLedger(${JSON.stringify(id)}) beside tenants named after other prototype members`,
          await call(context, 'readLedger', () => store.readLedger(id)),
          null,
        );
      }
    },
  },
  {
    name: 'cancel: requestCancel is seen by readRun and readControl of that run only',
    async body(context) {
      const { store } = context;
      expectEqual(
        context,
        'requestCancel of a run that does not exist',
        await call(context, 'requestCancel', () => store.requestCancel('run-missing')),
        false,
      );
      await createdRun(context, 'run-c');
      await createdRun(context, 'run-c2', 'owner-b');
      expectEqual(
        context,
        'readControl before a cancel',
        (await call(context, 'readControl', () => store.readControl('run-c'))).cancelRequested,
        false,
      );
      expectEqual(
        context,
        'requestCancel of an existing run',
        await call(context, 'requestCancel', () => store.requestCancel('run-c')),
        true,
      );
      expectEqual(
        context,
        'readRun(runId).cancelRequested after requestCancel',
        (await readRun(context, 'run-c'))?.cancelRequested,
        true,
      );
      expectEqual(
        context,
        'readControl(runId).cancelRequested after requestCancel',
        (await call(context, 'readControl', () => store.readControl('run-c'))).cancelRequested,
        true,
      );
      expectEqual(
        context,
        'readControl of another run after requestCancel',
        (await call(context, 'readControl', () => store.readControl('run-c2'))).cancelRequested,
        false,
      );
      expectEqual(
        context,
        'the lease owner after requestCancel (a cancel does not free the lease)',
        (await readRun(context, 'run-c'))?.leaseOwner,
        'owner-a',
      );
    },
  },
  {
    name: 'control with an append: an append answers what readControl would, or nothing',
    async body(context) {
      const { store } = context;
      const lease = await createdRun(context, 'run-a');
      const appended = (seq: number) =>
        call(context, `append(seq ${seq})`, () =>
          store.append('run-a', [{ seq, kind: 'event', body: `{"n":${seq}}` }], lease),
        );
      // A store may leave the answer out (its owner then asks readControl); one it gives must be exact.
      const answers: [string, unknown, RunControl][] = [];
      answers.push([
        'an append to a run neither paused nor cancelled',
        await appended(1),
        { paused: null, cancelRequested: false },
      ]);
      await call(context, "setPaused('drill')", () => store.setPaused('drill'));
      await call(context, 'requestCancel', () => store.requestCancel('run-a'));
      answers.push([
        "an append after setPaused('drill') and requestCancel",
        await appended(2),
        { paused: 'drill', cancelRequested: true },
      ]);
      await call(context, 'setPaused(null)', () => store.setPaused(null));
      for (const [what, answer, expected] of answers)
        if (answer !== undefined) expectEqual(context, `the control ${what} answers`, answer, expected);
    },
  },
  {
    name: 'snapshot with an append: a store that says it wrote one wrote it with the rows, and never without them',
    async body(context) {
      const { store } = context;
      const lease = await createdRun(context, 'run-as');
      const appendWith = (rows: StoreRow[], snapshot: StoreRow, as = lease) =>
        store.append('run-as', rows, as, undefined, undefined, snapshot);
      const outcome = await call(context, 'append(seqs 1, 2) with a snapshot at seq 2', () =>
        appendWith([eventRow(1), eventRow(2)], snapshotRow(2)),
      );
      // A store may not take it (its owner then gives it with writeSnapshot); one that says it did must have.
      if (outcome?.snapshotWritten !== true) return;
      expectEqual(
        context,
        'latestSnapshot after an append that wrote a snapshot at seq 2',
        await latestSnapshot(context, 'run-as'),
        snapshotRow(2),
      );
      await expectConflict(
        context,
        'append(seqs 3, 2) with a snapshot at seq 3 (seq 2 taken)',
        () => appendWith([eventRow(3), eventRow(2)], snapshotRow(3)),
        'run-as',
      );
      await expectConflict(
        context,
        'append(seq 3) with a snapshot at seq 3 by owner-b (not the lease holder)',
        () => appendWith([eventRow(3)], snapshotRow(3), { owner: 'owner-b', until: lease.until }),
        'run-as',
      );
      expectEqual(
        context,
        'latestSnapshot after two refused appends with snapshots at seq 3',
        await latestSnapshot(context, 'run-as'),
        snapshotRow(2),
      );
      // As `writeSnapshot`: a snapshot older than the latest (here given with a later commit) leaves the latest.
      await call(context, 'append(seq 3) with a snapshot at seq 1 (older than the latest)', () =>
        appendWith([eventRow(3)], snapshotRow(1)),
      );
      expectEqual(
        context,
        'latestSnapshot after an append with a snapshot at seq 1 (seq 2 the latest)',
        await latestSnapshot(context, 'run-as'),
        snapshotRow(2),
      );
      expectEqual(
        context,
        'the journal after two refused appends and one accepted',
        (await readJournal(context, 'run-as', 0)).map((row) => row.seq),
        [1, 2, 3],
      );
    },
  },
  {
    name: 'pause: setPaused is one flag for every run of the store, lifted with null',
    async body(context) {
      const { store } = context;
      await createdRun(context, 'run-p');
      const control = (runId: string) =>
        call(context, `readControl(${JSON.stringify(runId)})`, () => store.readControl(runId));
      expectEqual(context, 'readControl(runId).paused of a new store', (await control('run-p')).paused, null);
      await call(context, "setPaused('incident 42')", () => store.setPaused('incident 42'));
      expectEqual(context, "readControl of a run after setPaused('incident 42')", await control('run-p'), {
        paused: 'incident 42',
        cancelRequested: false,
      });
      expectEqual(
        context,
        "readControl of a run not created yet after setPaused('incident 42')",
        (await control('run-later')).paused,
        'incident 42',
      );
      await call(context, "setPaused('incident 43')", () => store.setPaused('incident 43'));
      expectEqual(
        context,
        'readControl after a second setPaused (the latest reason)',
        (await control('run-p')).paused,
        'incident 43',
      );
      await call(context, 'setPaused(null)', () => store.setPaused(null));
      expectEqual(context, 'readControl after setPaused(null)', (await control('run-p')).paused, null);
      const poll = store.pausePollMs;
      if (!(typeof poll === 'number' && Number.isFinite(poll) && poll > 0))
        fail(context, 'store.pausePollMs', 'a positive number of milliseconds', describe(poll));
    },
  },
];
