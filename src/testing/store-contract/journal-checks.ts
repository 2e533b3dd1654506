/**
 * Contract checks on run rows and the journal: what a durable run writes before each effect and reads on
 * resume, so a store that loses, reorders or doubles a record here replays a run wrongly.
 */
import type { RunRow, StoreRow } from '../../contracts/store.js';
import { call, expectConflict, expectEqual, type CheckContext } from './expectations.js';

/** One check of the contract: a name a runner can show, and what it does on a fresh store. */
export interface ContractCheckBody {
  name: string;
  body(context: CheckContext): Promise<void>;
}

const LEASE_MS = 30_000;

/** The fields of the contract's `RunRow`, whatever else a store returns beside them. */
export function runRowOf(row: RunRow | null): RunRow | null {
  return row === null
    ? null
    : {
        runId: row.runId,
        body: row.body,
        leaseOwner: row.leaseOwner,
        leaseUntil: row.leaseUntil,
        cancelRequested: row.cancelRequested,
      };
}

/** The fields of the contract's `StoreRow`. */
export function storeRowsOf(rows: readonly StoreRow[]): StoreRow[] {
  return rows.map(({ seq, kind, body }) => ({ seq, kind, body }));
}

export const eventRow = (seq: number, body = `{"seq":${seq}}`): StoreRow => ({ seq, kind: 'event', body });

/** A run held by `owner`, created for a check. */
export async function createdRun(
  context: CheckContext,
  runId: string,
  owner = 'owner-a',
  body = '{"state":"running"}',
) {
  const lease = { owner, until: context.now + LEASE_MS };
  const created = await call(context, `createRun(${JSON.stringify(runId)})`, () =>
    context.store.createRun(runId, body, lease),
  );
  expectEqual(context, `createRun(${JSON.stringify(runId)}) on an empty store`, created, true);
  return lease;
}

const readRun = (context: CheckContext, runId: string) =>
  call(context, `readRun(${JSON.stringify(runId)})`, () => context.store.readRun(runId));
const readJournal = (context: CheckContext, runId: string, afterSeq: number) =>
  call(context, `readJournal(${JSON.stringify(runId)}, ${afterSeq})`, async () =>
    storeRowsOf(await context.store.readJournal(runId, afterSeq)),
  );
export { readRun, readJournal };

export const journalChecks: ContractCheckBody[] = [
  {
    name: 'run rows: createRun then readRun round trip, a second createRun refused',
    async body(context) {
      const { store, now } = context;
      expectEqual(context, 'readRun of a run never created', await readRun(context, 'order-1'), null);
      const body = '{"schemaVersion":1,"kind":"run","state":"running"}';
      const lease = await createdRun(context, 'order-1', 'owner-a', body);
      expectEqual(context, 'readRun after createRun', runRowOf(await readRun(context, 'order-1')), {
        runId: 'order-1',
        body,
        leaseOwner: 'owner-a',
        leaseUntil: lease.until,
        cancelRequested: false,
      });
      const again = await call(context, 'createRun of an existing id', () =>
        store.createRun('order-1', '{"other":true}', { owner: 'owner-b', until: now + 60_000 }),
      );
      expectEqual(context, 'createRun of an id that exists already', again, false);
      expectEqual(
        context,
        'readRun after a refused createRun (body and lease unchanged)',
        runRowOf(await readRun(context, 'order-1')),
        { runId: 'order-1', body, leaseOwner: 'owner-a', leaseUntil: lease.until, cancelRequested: false },
      );
      await createdRun(context, 'order-2', 'owner-b', '{"n":2}');
      expectEqual(
        context,
        'readRun of a second run (runs are separate rows)',
        (await readRun(context, 'order-2'))?.body,
        '{"n":2}',
      );
      expectEqual(
        context,
        'readRun of the first run after a second was created',
        (await readRun(context, 'order-1'))?.body,
        body,
      );
    },
  },
  {
    name: 'journal: append then read back in seq order',
    async body(context) {
      const { store } = context;
      const lease = await createdRun(context, 'run-j');
      expectEqual(context, 'readJournal of a new run', await readJournal(context, 'run-j', 0), []);
      await call(context, 'append of seqs 1, 2, 3 in one call', () =>
        store.append('run-j', [eventRow(1), eventRow(2), { seq: 3, kind: 'snapshot-marker', body: 'three' }], lease),
      );
      await call(context, 'append of seq 4', () => store.append('run-j', [eventRow(4)], lease));
      await call(context, 'append of seqs 5, 6', () => store.append('run-j', [eventRow(5), eventRow(6)], lease));
      const all = [
        eventRow(1),
        eventRow(2),
        { seq: 3, kind: 'snapshot-marker', body: 'three' },
        eventRow(4),
        eventRow(5),
        eventRow(6),
      ];
      expectEqual(
        context,
        'readJournal(runId, 0) after appending seqs 1 to 6',
        await readJournal(context, 'run-j', 0),
        all,
      );
      expectEqual(
        context,
        'readJournal(runId, 3): the rows after seq 3 only',
        await readJournal(context, 'run-j', 3),
        all.slice(3),
      );
      expectEqual(
        context,
        'readJournal(runId, 6): nothing after the last seq',
        await readJournal(context, 'run-j', 6),
        [],
      );
      // Seqs written out of order (9 before 8) still read in seq order: resume replays by seq.
      await call(context, 'append of seq 9', () => store.append('run-j', [eventRow(9)], lease));
      await call(context, 'append of seq 8 after seq 9', () => store.append('run-j', [eventRow(8)], lease));
      expectEqual(
        context,
        'readJournal(runId, 6) after appending seq 9, then seq 8',
        await readJournal(context, 'run-j', 6),
        [eventRow(8), eventRow(9)],
      );
      await createdRun(context, 'run-other', 'owner-b');
      expectEqual(
        context,
        "readJournal of another run (a run's journal is its own)",
        await readJournal(context, 'run-other', 0),
        [],
      );
      expectEqual(
        context,
        'readJournal of a run that does not exist',
        await readJournal(context, 'run-missing', 0),
        [],
      );
    },
  },
  {
    name: 'journal: a read of some kinds returns every row of those kinds after afterSeq, in seq order',
    async body(context) {
      const { store } = context;
      const lease = await createdRun(context, 'run-k');
      const chunk = (seq: number, kind: string): StoreRow => ({ seq, kind, body: `{"${kind}":${seq}}` });
      const rows = [eventRow(1), chunk(2, 'trace'), chunk(3, 'transcript'), eventRow(4), chunk(6, 'trace')];
      await call(context, 'append of seqs 1 to 4 and 6, of kinds event, trace and transcript', () =>
        store.append('run-k', rows, lease),
      );
      // A store may leave other kinds in (the durable layer filters again); it must not leave any of these out.
      const of = async (afterSeq: number, kinds: string[]) =>
        storeRowsOf(
          await call(context, `readJournal("run-k", ${afterSeq}, ${JSON.stringify(kinds)})`, () =>
            store.readJournal('run-k', afterSeq, kinds),
          ),
        );
      const kept = (read: StoreRow[], kinds: string[]) => read.filter((row) => kinds.includes(row.kind));
      const chunks = ['trace', 'transcript'];
      const read = await of(0, chunks);
      expectEqual(context, 'readJournal(runId, 0, [trace, transcript]): those rows', kept(read, chunks), [
        chunk(2, 'trace'),
        chunk(3, 'transcript'),
        chunk(6, 'trace'),
      ]);
      expectEqual(
        context,
        'readJournal(runId, 0, [trace, transcript]): in seq order',
        read.map((row) => row.seq),
        [...read.map((row) => row.seq)].sort((a, b) => a - b),
      );
      expectEqual(
        context,
        'readJournal(runId, 2, [trace, transcript]): the rows after seq 2 only',
        kept(await of(2, chunks), chunks),
        [chunk(3, 'transcript'), chunk(6, 'trace')],
      );
      expectEqual(context, 'readJournal(runId, 0, [event])', kept(await of(0, ['event']), ['event']), [
        eventRow(1),
        eventRow(4),
      ]);
      expectEqual(
        context,
        'readJournal(runId, 0) without kinds: every row',
        await readJournal(context, 'run-k', 0),
        rows,
      );
    },
  },
  {
    name: 'journal: the rows of one append may come in any seq order; each reads back as written',
    async body(context) {
      const { store } = context;
      const lease = await createdRun(context, 'run-d');
      // Long bodies: a store that packs an append's long rows together must not rely on their order.
      const long = (seq: number, kind = 'event'): StoreRow => ({
        seq,
        kind,
        body: JSON.stringify({ seq, kind, filler: `${kind} ${seq} `.repeat(40) }),
      });
      const rows = [long(5), long(4, 'tool-result'), long(3), eventRow(2), long(1, 'tool-result')];
      await call(context, 'append of long rows in descending seq order (5, 4, 3, 2, 1)', () =>
        store.append('run-d', rows, lease),
      );
      const ascending = [...rows].sort((a, b) => a.seq - b.seq);
      expectEqual(
        context,
        'readJournal(runId, 0) after a descending append',
        await readJournal(context, 'run-d', 0),
        ascending,
      );
      expectEqual(
        context,
        'readJournal(runId, 2) after a descending append',
        await readJournal(context, 'run-d', 2),
        ascending.slice(2),
      );
      const events = storeRowsOf(
        await call(context, 'readJournal("run-d", 0, ["event"])', () => store.readJournal('run-d', 0, ['event'])),
      ).filter((row) => row.kind === 'event');
      expectEqual(context, 'readJournal(runId, 0, [event]) after a descending append', events, [
        eventRow(2),
        long(3),
        long(5),
      ]);
      const results = storeRowsOf(
        await call(context, 'readJournal("run-d", 3, ["tool-result"])', () =>
          store.readJournal('run-d', 3, ['tool-result']),
        ),
      ).filter((row) => row.kind === 'tool-result');
      expectEqual(context, 'readJournal(runId, 3, [tool-result]) after a descending append', results, [
        long(4, 'tool-result'),
      ]);
    },
  },
  {
    name: 'journal: a second writer of one (runId, seq) is refused with StoreConflictError',
    async body(context) {
      const { store, now } = context;
      const lease = await createdRun(context, 'run-d');
      await call(context, 'append of seq 1', () => store.append('run-d', [eventRow(1, 'first')], lease));
      await expectConflict(
        context,
        'append of seq 1 again by the same owner',
        () => store.append('run-d', [eventRow(1, 'second')], lease),
        'run-d',
      );
      await expectConflict(
        context,
        'append of seqs 2 and 1 in one call (1 exists)',
        () => store.append('run-d', [eventRow(2, 'new'), eventRow(1, 'again')], lease),
        'run-d',
      );
      expectEqual(
        context,
        'readJournal after the refused appends (a refused batch writes none of its rows)',
        await readJournal(context, 'run-d', 0),
        [eventRow(1, 'first')],
      );
      const taker = { owner: 'owner-b', until: now + LEASE_MS };
      expectEqual(
        context,
        'acquireLease by owner-b taking over from owner-a',
        await call(context, 'acquireLease with takeOverFrom', () => store.acquireLease('run-d', taker, now, 'owner-a')),
        true,
      );
      await expectConflict(
        context,
        'append of seq 1 by the owner that took the run over',
        () => store.append('run-d', [eventRow(1, 'taker')], taker),
        'run-d',
      );
      await call(context, 'append of seq 2 by the new owner', () =>
        store.append('run-d', [eventRow(2, 'taker')], taker),
      );
      expectEqual(context, 'readJournal after the take-over', await readJournal(context, 'run-d', 0), [
        eventRow(1, 'first'),
        eventRow(2, 'taker'),
      ]);
      const otherLease = await createdRun(context, 'run-d2', 'owner-c');
      await call(context, 'append of seq 1 in another run (seqs are per run)', () =>
        store.append('run-d2', [eventRow(1, 'other run')], otherLease),
      );
      expectEqual(context, 'readJournal of the other run', await readJournal(context, 'run-d2', 0), [
        eventRow(1, 'other run'),
      ]);
    },
  },
  {
    name: 'journal: writes to a run that does not exist are refused with StoreConflictError',
    async body(context) {
      const lease = { owner: 'owner-a', until: context.now + LEASE_MS };
      await expectConflict(
        context,
        'append to a run never created',
        () => context.store.append('run-nowhere', [eventRow(1)], lease),
        'run-nowhere',
      );
      await expectConflict(
        context,
        'heartbeat (append of no rows) of a run never created',
        () => context.store.append('run-nowhere', [], lease),
        'run-nowhere',
      );
      await expectConflict(
        context,
        'writeSnapshot of a run never created',
        () => context.store.writeSnapshot('run-nowhere', { seq: 1, kind: 'snapshot', body: '{}' }, lease),
        'run-nowhere',
      );
      expectEqual(
        context,
        'readRun after the refused writes (no run row made by them)',
        await readRun(context, 'run-nowhere'),
        null,
      );
    },
  },
];
