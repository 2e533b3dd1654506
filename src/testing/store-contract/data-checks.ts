/**
 * Contract checks on tenant ledgers and on the text itself: a ledger written by compare-and-set never
 * loses a concurrent hold or charge, and every record comes back exactly as written, large or not ASCII.
 */
import type { StoreRow } from '../../contracts/store.js';
import { call, expectEqual, expectText, fail, type CheckContext } from './expectations.js';
import { createdRun, readJournal, readRun, type ContractCheckBody } from './journal-checks.js';

interface Ledger {
  spent: number;
  holds: Record<string, number>;
}

/** Read-modify-write of a ledger, retried on a lost compare-and-set as the durable layer does; the version it won from. */
async function updateLedger(
  context: CheckContext,
  tenantId: string,
  change: (ledger: Ledger) => Ledger,
  attempts: number,
): Promise<number | null> {
  for (let attempt = 0; attempt < attempts; attempt++) {
    const row = await context.store.readLedger(tenantId);
    const ledger = row === null ? { spent: 0, holds: {} } : (JSON.parse(row.body) as Ledger);
    if (await context.store.writeLedger(tenantId, JSON.stringify(change(ledger)), row?.version ?? null))
      return row?.version ?? null;
  }
  return fail(
    context,
    `updating tenant ${tenantId}'s ledger by compare-and-set`,
    `a write to succeed within ${attempts} attempts`,
    'every attempt refused (writeLedger never returns true for the version readLedger gave)',
  );
}

/** A deterministic text of exactly `length` characters: numbered chunks, so a lost or moved piece shows. */
function largeText(length: number, tag: string): string {
  const chunks: string[] = [];
  let size = 0;
  for (let index = 0; size < length; index++) {
    const chunk = `${tag}${index.toString(36).padStart(6, '0')};`;
    chunks.push(chunk);
    size += chunk.length;
  }
  return chunks.join('').slice(0, length);
}

const largeJson = (length: number, tag: string) => `{"blob":"${largeText(Math.max(0, length - 11), tag)}"}`;

/** Text a store must keep as written: accents, CJK, right-to-left, astral emoji with joiners, separators JSON leaves raw, quotes and SQL. */
const UNICODE_TEXT =
  'Grüße, 注文 №42 — ✓ 🚀 👩🏽‍💻 e\u0301 عربى עברית \u2028\u2029 "quoted" back\\slash it\'s\'; DROP TABLE runs; -- \uFFFD 𝔘𝔫𝔦𝔠𝔬𝔡𝔢';

export const dataChecks: ContractCheckBody[] = [
  {
    name: 'tenant ledger: writeLedger is a compare-and-set on the version readLedger gives',
    async body(context) {
      const { store } = context;
      const read = (tenantId: string) =>
        call(context, `readLedger(${JSON.stringify(tenantId)})`, () => store.readLedger(tenantId));
      const write = (tenantId: string, body: string, expected: number | null) =>
        call(context, `writeLedger(${JSON.stringify(tenantId)}, …, ${expected})`, () =>
          store.writeLedger(tenantId, body, expected),
        );
      expectEqual(context, 'readLedger of a tenant without a ledger', await read('acme'), null);
      expectEqual(
        context,
        'writeLedger of a new tenant expecting none (null)',
        await write('acme', '{"v":1}', null),
        true,
      );
      const first = await read('acme');
      expectEqual(context, 'readLedger after the first write (its body)', first?.body, '{"v":1}');
      if (typeof first?.version !== 'number')
        fail(context, 'readLedger after the first write (its version)', 'a number', JSON.stringify(first?.version));
      expectEqual(
        context,
        'writeLedger expecting no ledger when one exists',
        await write('acme', '{"v":"lost"}', null),
        false,
      );
      expectEqual(
        context,
        'writeLedger with a version that is not the current one',
        await write('acme', '{"v":"lost"}', first.version + 1000),
        false,
      );
      expectEqual(context, 'the ledger after two refused writes', await read('acme'), first);
      expectEqual(context, 'writeLedger with the current version', await write('acme', '{"v":2}', first.version), true);
      const second = await read('acme');
      expectEqual(context, 'readLedger after the second write (its body)', second?.body, '{"v":2}');
      if (typeof second?.version !== 'number' || second.version === first.version)
        fail(
          context,
          'the version after a write',
          `a number other than ${first.version}`,
          JSON.stringify(second?.version),
        );
      expectEqual(
        context,
        'writeLedger with the version the last write replaced',
        await write('acme', '{"v":"lost"}', first.version),
        false,
      );
      expectEqual(context, 'readLedger of another tenant (ledgers are per tenant)', await read('globex'), null);
    },
  },
  {
    name: 'tenant ledger: concurrent holds and settles never lose a count',
    async body(context) {
      const runs = Array.from({ length: context.concurrency }, (_, index) => `run-${index}`);
      const attempts = context.concurrency * 20;
      const wonFrom: (number | null)[] = [];
      const record = (version: number | null) => void wonFrom.push(version);
      await call(context, `${runs.length} runs holding, then settling, their share at once (Promise.all)`, () =>
        Promise.all(
          runs.map(async (runId) => {
            record(
              await updateLedger(
                context,
                'tenant-busy',
                (ledger) => ({ ...ledger, holds: { ...ledger.holds, [runId]: 1 } }),
                attempts,
              ),
            );
            record(
              await updateLedger(
                context,
                'tenant-busy',
                (ledger) => {
                  const holds = { ...ledger.holds };
                  delete holds[runId];
                  return { spent: ledger.spent + 1, holds };
                },
                attempts,
              ),
            );
          }),
        ),
      );
      const row = await call(context, 'readLedger after the runs', () => context.store.readLedger('tenant-busy'));
      const ledger = row === null ? null : (JSON.parse(row.body) as Ledger);
      expectEqual(context, `the ledger after ${runs.length} concurrent holds and settles of one each`, ledger, {
        spent: runs.length,
        holds: {},
      });
      const repeated = wonFrom.filter((version, index) => wonFrom.indexOf(version) !== index);
      expectEqual(
        context,
        'versions two successful writeLedger calls both expected (a lost update each)',
        repeated,
        [],
      );
    },
  },
  {
    name: 'large records: bodies of 1 MiB come back intact',
    async body(context) {
      const { store, largeRecordChars: size } = context;
      const runBody = largeJson(size, 'r');
      const lease = await createdRun(context, 'run-big', 'owner-a', runBody);
      const rows: StoreRow[] = [
        { seq: 1, kind: 'event', body: largeJson(size, 'j') },
        { seq: 2, kind: 'event', body: largeJson(size, 'k') },
      ];
      await call(context, `append of two rows of ${size} characters`, () => store.append('run-big', rows, lease));
      const nextBody = largeJson(size, 'n');
      await call(context, `append of no rows with a run body of ${size} characters`, () =>
        store.append('run-big', [], lease, nextBody),
      );
      const snapshot = largeJson(size, 's');
      await call(context, `writeSnapshot of ${size} characters`, () =>
        store.writeSnapshot('run-big', { seq: 2, kind: 'snapshot', body: snapshot }, lease),
      );
      const ledger = largeJson(size, 'l');
      await call(context, `writeLedger of ${size} characters`, () => store.writeLedger('tenant-big', ledger, null));
      const read = await readJournal(context, 'run-big', 0);
      expectEqual(
        context,
        'the seqs of the large journal rows',
        read.map((row) => row.seq),
        [1, 2],
      );
      expectText(context, 'journal row 1 as read back', read[0]?.body, rows[0]!.body);
      expectText(context, 'journal row 2 as read back', read[1]?.body, rows[1]!.body);
      // Without the row written before it in the same append (a store may pack an append's rows together).
      const after = await readJournal(context, 'run-big', 1);
      expectText(context, 'journal row 2 as read back after seq 1', after[0]?.body, rows[1]!.body);
      expectText(context, 'the run body as read back', (await readRun(context, 'run-big'))?.body, nextBody);
      expectText(
        context,
        'the snapshot as read back',
        (await call(context, 'latestSnapshot', () => store.latestSnapshot('run-big')))?.body,
        snapshot,
      );
      expectText(
        context,
        'the ledger as read back',
        (await call(context, 'readLedger', () => store.readLedger('tenant-big')))?.body,
        ledger,
      );
    },
  },
  {
    name: 'unicode: ids, owners, reasons and bodies come back as written',
    async body(context) {
      const { store, now } = context;
      const runId = 'заказ-注文-🚀';
      const owner = 'hôte-ß:4242:🦀';
      const text = (tag: string) => JSON.stringify({ tag, text: UNICODE_TEXT });
      const lease = await createdRun(context, runId, owner, text('run'));
      expectEqual(context, 'the lease owner as read back', (await readRun(context, runId))?.leaseOwner, owner);
      await call(context, 'append of a row with unicode text', () =>
        store.append(runId, [{ seq: 1, kind: 'event', body: text('row') }], lease),
      );
      await call(context, 'writeSnapshot with unicode text', () =>
        store.writeSnapshot(runId, { seq: 1, kind: 'snapshot', body: text('snapshot') }, lease),
      );
      await call(context, 'writeLedger of a unicode tenant id', () =>
        store.writeLedger('テナント-ü', text('ledger'), null),
      );
      await call(context, 'setPaused with a unicode reason', () => store.setPaused(UNICODE_TEXT));
      expectText(context, 'the run body as read back', (await readRun(context, runId))?.body, text('run'));
      expectText(context, 'the journal row as read back', (await readJournal(context, runId, 0))[0]?.body, text('row'));
      expectText(
        context,
        'the snapshot as read back',
        (await call(context, 'latestSnapshot', () => store.latestSnapshot(runId)))?.body,
        text('snapshot'),
      );
      expectText(
        context,
        'the ledger as read back',
        (await call(context, 'readLedger', () => store.readLedger('テナント-ü')))?.body,
        text('ledger'),
      );
      expectText(
        context,
        'the pause reason as read back',
        (await call(context, 'readControl', () => store.readControl(runId))).paused,
        UNICODE_TEXT,
      );
      expectEqual(
        context,
        'acquireLease by the unicode owner (a renewal: the owner compares equal)',
        await call(context, 'acquireLease', () => store.acquireLease(runId, { owner, until: now + 60_000 }, now)),
        true,
      );
      await call(context, 'setPaused(null)', () => store.setPaused(null));
    },
  },
];
