/**
 * Contract checks on `prune`: a finished run goes with its journal and snapshot once it is old enough; a
 * run still running or waiting, and a run finished later, stay whole.
 */
import { call, expectEqual } from './expectations.js';
import { createdRun, eventRow, readJournal, readRun, type ContractCheckBody } from './journal-checks.js';

export const pruneChecks: ContractCheckBody[] = [
  {
    name: 'prune: deletes the runs finished before the time given, with their journal and snapshot, and nothing else',
    async body(context) {
      const { store, now } = context;
      const finish = async (runId: string, finishedAt: number | undefined) => {
        const lease = await createdRun(context, runId);
        await call(context, `append(${JSON.stringify(runId)}, [event 1, event 2])`, () =>
          store.append(runId, [eventRow(1), eventRow(2)], lease),
        );
        await call(context, `writeSnapshot(${JSON.stringify(runId)}, seq 2)`, () =>
          store.writeSnapshot(runId, { seq: 2, kind: 'snapshot', body: '{"at":2}' }, lease),
        );
        const state = finishedAt === undefined ? 'waiting' : 'finished';
        await call(context, `append(${JSON.stringify(runId)}, [event 3], run body ${state}, finishedAt)`, () =>
          store.append(runId, [eventRow(3)], lease, `{"state":"${state}"}`, finishedAt),
        );
      };
      await finish('old', now - 10_000);
      await finish('recent', now - 10);
      await finish('waiting', undefined);
      await createdRun(context, 'running');
      const deleted = await call(context, 'prune({ finishedBefore: now - 1000 })', () =>
        store.prune({ finishedBefore: now - 1_000 }),
      );
      expectEqual(context, 'prune: how many runs it deleted', deleted, 1);
      expectEqual(context, 'readRun of the pruned run', await readRun(context, 'old'), null);
      expectEqual(context, 'readJournal of the pruned run', await readJournal(context, 'old', 0), []);
      expectEqual(
        context,
        'latestSnapshot of the pruned run',
        await call(context, 'latestSnapshot("old")', () => store.latestSnapshot('old')),
        null,
      );
      for (const runId of ['recent', 'waiting']) {
        expectEqual(
          context,
          `readJournal of ${runId} (kept)`,
          (await readJournal(context, runId, 0)).map((row) => row.seq),
          [1, 2, 3],
        );
        expectEqual(
          context,
          `latestSnapshot of ${runId} (kept)`,
          (await call(context, `latestSnapshot(${JSON.stringify(runId)})`, () => store.latestSnapshot(runId)))?.seq,
          2,
        );
      }
      expectEqual(context, 'readRun of the running run (kept)', (await readRun(context, 'running'))?.runId, 'running');
      // A run continued after it finished (no finishedAt with its new body) is no longer finished.
      const lease = { owner: 'owner-a', until: now + 30_000 };
      await call(context, 'append("recent", [], lease, running body)', () =>
        store.append('recent', [], lease, '{"state":"running"}'),
      );
      expectEqual(
        context,
        'prune({ finishedBefore: now + 1000 }) after "recent" runs again',
        await call(context, 'prune', () => store.prune({ finishedBefore: now + 1_000 })),
        0,
      );
      expectEqual(
        context,
        'readRun("recent") (running again, kept)',
        (await readRun(context, 'recent'))?.body,
        '{"state":"running"}',
      );
    },
  },
];
