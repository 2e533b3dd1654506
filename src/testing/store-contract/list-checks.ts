/**
 * Contract checks on `listRuns` (what `loopstate runs list` and the console read): every run once, in run
 * id order, with its current body (a long one included) and when it finished, page after page.
 */
import { call, expectEqual, fail } from './expectations.js';
import { createdRun, eventRow, type ContractCheckBody } from './journal-checks.js';

// Unsorted, with ids that sort differently by UTF-16 unit than by code point ('\uff5e' before the astral '\u{1f600}'), and a prototype key.
const IDS = ['run-b', 'run-a', '__proto__', 'run-\u{1f600}', 'run-\uff5e', 'run-c'];
const SORTED = ['__proto__', 'run-a', 'run-b', 'run-c', 'run-\uff5e', 'run-\u{1f600}'];

export const listChecks: ContractCheckBody[] = [
  {
    name: 'listRuns: every run once, in run id order, with its latest body and finishedAt, page by page',
    async body(context) {
      const { store, now } = context;
      const listRuns = store.listRuns?.bind(store);
      if (listRuns === undefined)
        fail(
          context,
          'store.listRuns',
          'a listRuns method (loopstate runs and the console list runs through it)',
          'no such method',
        );
      expectEqual(
        context,
        'listRuns({ limit: 10 }) of an empty store',
        await call(context, 'listRuns', () => listRuns({ limit: 10 })),
        [],
      );
      const leases = new Map<string, { owner: string; until: number }>();
      for (const runId of IDS) leases.set(runId, await createdRun(context, runId, 'owner-a', `{"created":"${runId}"}`));
      // A finished run's new body (long: a store that deflates it must give it back whole) and its finish time.
      const finishedBody = `{"state":"finished","padding":"${'x'.repeat(2_000)}"}`;
      await call(context, 'append("run-b", [event 1], lease, finished body, finishedAt)', () =>
        store.append('run-b', [eventRow(1)], leases.get('run-b')!, finishedBody, now - 5),
      );
      const all = await call(context, 'listRuns({ limit: 100 })', () => listRuns({ limit: 100 }));
      expectEqual(
        context,
        'listRuns({ limit: 100 }): the run ids, in order',
        all.map((run) => run.runId),
        SORTED,
      );
      const runB = all.find((run) => run.runId === 'run-b');
      expectEqual(context, 'listRuns: run-b finishedAt', runB?.finishedAt, now - 5);
      if (runB?.body !== finishedBody)
        fail(
          context,
          'listRuns: run-b body',
          `the ${finishedBody.length} characters last written`,
          String(runB?.body).slice(0, 60),
        );
      expectEqual(
        context,
        'listRuns: the other runs (bodies as created, not finished)',
        all
          .filter((run) => run.runId !== 'run-b')
          .map((run) => ({ runId: run.runId, body: run.body, finishedAt: run.finishedAt })),
        SORTED.filter((runId) => runId !== 'run-b').map((runId) => ({
          runId,
          body: `{"created":"${runId}"}`,
          finishedAt: null,
        })),
      );
      const paged: string[] = [];
      let after: string | undefined;
      for (let page = 0; page < 10; page++) {
        const rows = await call(context, `listRuns({ limit: 4, after: ${JSON.stringify(after)} })`, () =>
          listRuns(after === undefined ? { limit: 4 } : { limit: 4, after }),
        );
        if (rows.length > 4) fail(context, 'listRuns({ limit: 4 })', 'at most 4 runs', `${rows.length}`);
        if (rows.length === 0) break;
        paged.push(...rows.map((run) => run.runId));
        after = rows.at(-1)!.runId;
      }
      expectEqual(context, 'listRuns page by page (limit 4, after the last id)', paged, SORTED);
    },
  },
];
