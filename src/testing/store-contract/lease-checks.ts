/**
 * Contract checks on leases: one owner drives a run at a time. The lease is a compare-and-set on the run
 * row; a writer that lost it must be refused, or two processes would both run the run's side effects.
 */
import { call, expectConflict, expectEqual, type CheckContext } from './expectations.js';
import { createdRun, eventRow, readJournal, readRun, type ContractCheckBody } from './journal-checks.js';

const owner = async (context: CheckContext, runId: string) => (await readRun(context, runId))?.leaseOwner;

export const leaseChecks: ContractCheckBody[] = [
  {
    name: 'leases: take, renew and release, compare-and-set against other and stale owners',
    async body(context) {
      const { store, now } = context;
      const a = await createdRun(context, 'run-l');
      const b = { owner: 'owner-b', until: now + 30_000 };
      const acquire = (lease: { owner: string; until: number }, takeOverFrom?: string) =>
        call(
          context,
          `acquireLease by ${lease.owner}${takeOverFrom === undefined ? '' : ` taking over from ${takeOverFrom}`}`,
          () => store.acquireLease('run-l', lease, now, takeOverFrom),
        );
      expectEqual(context, 'acquireLease by owner-b while owner-a holds an unexpired lease', await acquire(b), false);
      expectEqual(context, 'the lease owner after the refused acquireLease', await owner(context, 'run-l'), 'owner-a');
      const renewed = { owner: 'owner-a', until: now + 45_000 };
      expectEqual(context, 'acquireLease by the owner that holds the lease (a renewal)', await acquire(renewed), true);
      expectEqual(
        context,
        'leaseUntil after the renewal',
        (await readRun(context, 'run-l'))?.leaseUntil,
        renewed.until,
      );
      await call(context, 'releaseLease by owner-b, who does not hold it', () =>
        store.releaseLease('run-l', 'owner-b'),
      );
      expectEqual(context, 'the lease owner after a release by a non-owner', await owner(context, 'run-l'), 'owner-a');
      expectEqual(
        context,
        'acquireLease by owner-b naming owner-c (not the holder) as dead',
        await acquire(b, 'owner-c'),
        false,
      );
      expectEqual(
        context,
        'acquireLease by owner-b naming owner-a (the holder) as dead',
        await acquire(b, 'owner-a'),
        true,
      );
      expectEqual(context, 'the lease owner after the take-over', await owner(context, 'run-l'), 'owner-b');
      // owner-a is now stale: every write it attempts must be refused, and it cannot free b's lease.
      await expectConflict(
        context,
        'append by the stale owner-a',
        () => store.append('run-l', [eventRow(1)], a),
        'run-l',
      );
      await expectConflict(
        context,
        'heartbeat (append of no rows) by the stale owner-a',
        () => store.append('run-l', [], a),
        'run-l',
      );
      await expectConflict(
        context,
        'append with a run body by the stale owner-a',
        () => store.append('run-l', [], a, '{"stale":true}'),
        'run-l',
      );
      await expectConflict(
        context,
        'writeSnapshot by the stale owner-a',
        () => store.writeSnapshot('run-l', { seq: 1, kind: 'snapshot', body: '{}' }, a),
        'run-l',
      );
      expectEqual(context, 'readJournal after the stale writes', await readJournal(context, 'run-l', 0), []);
      expectEqual(
        context,
        'latestSnapshot after the stale write',
        await call(context, 'latestSnapshot', () => store.latestSnapshot('run-l')),
        null,
      );
      expectEqual(
        context,
        'the run body after the stale write',
        (await readRun(context, 'run-l'))?.body,
        '{"state":"running"}',
      );
      await call(context, 'releaseLease by the stale owner-a', () => store.releaseLease('run-l', 'owner-a'));
      expectEqual(
        context,
        'the lease owner after a release by the stale owner-a',
        await owner(context, 'run-l'),
        'owner-b',
      );
      await call(context, 'releaseLease by owner-b, the holder', () => store.releaseLease('run-l', 'owner-b'));
      expectEqual(context, 'the lease owner after its release', await owner(context, 'run-l'), null);
      expectEqual(
        context,
        'acquireLease by owner-c of a released lease',
        await acquire({ owner: 'owner-c', until: now + 30_000 }),
        true,
      );
      expectEqual(
        context,
        'acquireLease of a run that does not exist',
        await call(context, 'acquireLease of a missing run', () => store.acquireLease('run-missing', b, now)),
        false,
      );
    },
  },
  {
    name: 'leases: an expired lease is free, judged by the `now` the caller passes',
    async body(context) {
      const { store, now } = context;
      const a = await createdRun(context, 'run-e');
      const b = { owner: 'owner-b', until: a.until + 30_000 };
      // Judged by `now`, not the store's own clock: the durable layer passes the clock it runs on.
      const before = await call(context, 'acquireLease just before expiry', () =>
        store.acquireLease('run-e', b, a.until - 1, undefined),
      );
      expectEqual(context, `acquireLease by owner-b at now = leaseUntil - 1 (${a.until - 1})`, before, false);
      const after = await call(context, 'acquireLease just after expiry', () =>
        store.acquireLease('run-e', b, a.until + 1, undefined),
      );
      expectEqual(
        context,
        `acquireLease by owner-b at now = leaseUntil + 1 (${a.until + 1}), the lease being expired`,
        after,
        true,
      );
      expectEqual(
        context,
        'the run row after the expired lease was taken',
        { owner: await owner(context, 'run-e'), until: (await readRun(context, 'run-e'))?.leaseUntil },
        { owner: 'owner-b', until: b.until },
      );
      await expectConflict(
        context,
        'append by owner-a, whose lease expired and was taken',
        () => store.append('run-e', [eventRow(1)], a),
        'run-e',
      );
      expectEqual(
        context,
        'acquireLease by owner-a back at the start time (owner-b holds it now)',
        await call(context, 'acquireLease', () => store.acquireLease('run-e', a, now)),
        false,
      );
    },
  },
  {
    name: 'leases: a heartbeat and a new run body renew the lease; rows and body are written together',
    async body(context) {
      const { store, now } = context;
      await createdRun(context, 'run-h');
      const later = { owner: 'owner-a', until: now + 90_000 };
      await call(context, 'heartbeat (append of no rows)', () => store.append('run-h', [], later));
      expectEqual(context, 'leaseUntil after a heartbeat', (await readRun(context, 'run-h'))?.leaseUntil, later.until);
      const latest = { owner: 'owner-a', until: now + 120_000 };
      await call(context, 'append of rows with a run body', () =>
        store.append('run-h', [eventRow(1), eventRow(2)], latest, '{"state":"waiting"}'),
      );
      expectEqual(
        context,
        'the run row after an append with a run body',
        { body: (await readRun(context, 'run-h'))?.body, leaseUntil: (await readRun(context, 'run-h'))?.leaseUntil },
        { body: '{"state":"waiting"}', leaseUntil: latest.until },
      );
      expectEqual(context, 'readJournal after an append with a run body', await readJournal(context, 'run-h', 0), [
        eventRow(1),
        eventRow(2),
      ]);
      await expectConflict(
        context,
        'append with a run body whose row seq exists',
        () => store.append('run-h', [eventRow(2)], latest, '{"state":"finished"}'),
        'run-h',
      );
      expectEqual(
        context,
        'the run body after a refused append with a body (rows and body are one write)',
        (await readRun(context, 'run-h'))?.body,
        '{"state":"waiting"}',
      );
    },
  },
  {
    name: 'leases: of owners racing for one free run, exactly one wins',
    async body(context) {
      const { store, now } = context;
      await createdRun(context, 'run-r');
      await call(context, 'releaseLease by owner-a', () => store.releaseLease('run-r', 'owner-a'));
      const owners = ['racer-1', 'racer-2', 'racer-3', 'racer-4', 'racer-5', 'racer-6'];
      const won = await call(context, `acquireLease by ${owners.length} owners at once (Promise.all)`, () =>
        Promise.all(owners.map((racer) => store.acquireLease('run-r', { owner: racer, until: now + 30_000 }, now))),
      );
      const winners = owners.filter((_racer, index) => won[index] === true);
      expectEqual(
        context,
        `how many of ${owners.length} concurrent acquireLease calls on a free run returned true`,
        winners.length,
        1,
      );
      expectEqual(context, 'the lease owner after the race', await owner(context, 'run-r'), winners[0]);
    },
  },
];
