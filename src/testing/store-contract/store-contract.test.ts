/**
 * The store contract can fail: each deliberately broken store (a real `memoryStore` behind one wrong
 * method) is caught by the check named for the property it breaks, with a `StoreContractError` that says
 * what was expected and what came.
 */
import { describe, expect, it } from 'vitest';
import { LoopConfigError, memoryStore, type Store, type StoreRow } from 'loopstate';
import { storeContract, StoreContractError, type StoreContractOptions } from 'loopstate/testing';

/** A memory store with some methods replaced; `inner` is the real one underneath. */
const brokenStore = (patch: (inner: Store) => Partial<Store>) => (): Store => {
  const inner = memoryStore();
  return { ...inner, ...patch(inner) };
};

// Smaller than the defaults so the whole suite runs many times here quickly; still past a 64 KiB column.
const SMALL: StoreContractOptions = { largeRecordChars: 70_000, concurrency: 8 };

/** Every check of the suite run on `makeStore`: the ones that failed, by name, with their errors. */
async function failures(
  makeStore: () => Store | Promise<Store>,
  options: StoreContractOptions = SMALL,
): Promise<Map<string, unknown>> {
  const failed = new Map<string, unknown>();
  for (const check of storeContract(makeStore, options)) {
    try {
      await check.run();
    } catch (error) {
      failed.set(check.name, error);
    }
  }
  return failed;
}

const names = storeContract(() => memoryStore()).map((check) => check.name);
/** The full name of the one check whose name starts with `prefix`. */
const named = (prefix: string) => {
  const matches = names.filter((name) => name.startsWith(prefix));
  if (matches.length !== 1) throw new Error(`no single check named ${prefix}…: ${matches.join(', ')}`);
  return matches[0]!;
};

const JOURNAL_ORDER = 'journal: append then read';
const DUPLICATE_SEQ = 'journal: a second writer';
const KINDS = 'journal: a read of some kinds';
const ANY_ORDER = 'journal: the rows of one append may come in any seq order';
const LEASE_CAS = 'leases: take, renew';
const LEASE_EXPIRY = 'leases: an expired lease';
const LEASE_RACE = 'leases: of owners racing';
const SNAPSHOTS = 'snapshots:';
const APPEND_SNAPSHOT = 'snapshot with an append';
const APPROVALS = 'approvals:';
const IDS = 'ids:';
const CANCEL = 'cancel:';
const PAUSE = 'pause:';
const LEDGER_CAS = 'tenant ledger: writeLedger';
const LEDGER_CONCURRENT = 'tenant ledger: concurrent';
const LARGE = 'large records:';
const UNICODE = 'unicode:';
const RUN_ROWS = 'run rows:';
const HEARTBEAT = 'leases: a heartbeat';
const PRUNE = 'prune:';
const LEARNING_CAS = 'learning: writeLearning';
const LEARNING_CONCURRENT = 'learning: concurrent';
const LEARNING_LIST = 'learning: listLearning';
const LIST = 'listRuns:';
const APPEND_CONTROL = 'control with an append:';

/** A ledger kept in a plain object, compare-and-set included: right but for the ids it inherits. */
function plainObjectLedgers(): Partial<Store> {
  const ledgers: Record<string, { body: string; version: number }> = {};
  return {
    async readLedger(tenantId) {
      return ledgers[tenantId] ?? null;
    },
    async writeLedger(tenantId, body, expectedVersion) {
      if ((ledgers[tenantId]?.version ?? null) !== expectedVersion) return false;
      ledgers[tenantId] = { body, version: (expectedVersion ?? 0) + 1 };
      return true;
    },
  };
}

/** Text through a column that holds no character outside the Basic Multilingual Plane (MySQL's utf8mb3). */
const withoutAstral = (text: string) => text.replace(/[\u{10000}-\u{10FFFF}]/gu, '\uFFFD');

const breakages: { breakage: string; patch: (inner: Store) => Partial<Store>; caughtBy: string[] }[] = [
  {
    breakage: 'drops the second row of a batch',
    patch: (inner) => ({
      append: (runId, rows, lease, body) =>
        inner.append(
          runId,
          rows.filter((_row, index) => index !== 1),
          lease,
          body,
        ),
    }),
    caughtBy: [JOURNAL_ORDER, KINDS, ANY_ORDER, DUPLICATE_SEQ, HEARTBEAT, LARGE, PRUNE, LIST],
  },
  {
    breakage: 'reads nothing when asked for some kinds (a store that ignores them is fine, not one that drops them)',
    patch: (inner) => ({
      readJournal: async (runId, afterSeq, kinds) => (kinds === undefined ? inner.readJournal(runId, afterSeq) : []),
    }),
    caughtBy: [KINDS, ANY_ORDER],
  },
  {
    breakage: 'reads some kinds from the start, whatever afterSeq',
    patch: (inner) => ({
      readJournal: (runId, afterSeq, kinds) => inner.readJournal(runId, kinds === undefined ? afterSeq : 0, kinds),
    }),
    caughtBy: [KINDS, ANY_ORDER],
  },
  {
    breakage: 'reads the journal in the order it was written, not by seq',
    patch: (inner) => {
      const written = new Map<string, StoreRow[]>();
      return {
        async append(runId, rows, lease, body) {
          await inner.append(runId, rows, lease, body);
          written.set(runId, [...(written.get(runId) ?? []), ...rows]);
        },
        async readJournal(runId, afterSeq) {
          return (written.get(runId) ?? []).filter((row) => row.seq > afterSeq);
        },
      };
    },
    caughtBy: [JOURNAL_ORDER, ANY_ORDER, PRUNE, LIST],
  },
  {
    breakage: 'lets a second write of a seq through silently (the first record stays)',
    patch: (inner) => ({
      async append(runId, rows, lease, body) {
        const seqs = new Set((await inner.readJournal(runId, 0)).map((row) => row.seq));
        await inner.append(
          runId,
          rows.filter((row) => !seqs.has(row.seq)),
          lease,
          body,
        );
      },
    }),
    caughtBy: [DUPLICATE_SEQ, HEARTBEAT, PRUNE, LIST],
  },
  {
    breakage: 'hands the lease to whoever asks',
    patch: (inner) => ({
      async acquireLease(runId, lease, now) {
        const row = await inner.readRun(runId);
        if (row?.leaseOwner) await inner.releaseLease(runId, row.leaseOwner);
        return inner.acquireLease(runId, lease, now);
      },
    }),
    caughtBy: [LEASE_CAS, LEASE_EXPIRY],
  },
  {
    breakage: 'takes a lease by a read, then a separate write (no compare-and-set)',
    patch: (inner) => {
      // Who holds each run, kept beside the real store so the write below can overwrite any holder.
      const holders = new Map<string, string | null>();
      return {
        async createRun(runId, body, lease) {
          const created = await inner.createRun(runId, body, lease);
          if (created) holders.set(runId, lease.owner);
          return created;
        },
        async releaseLease(runId, owner) {
          await inner.releaseLease(runId, owner);
          if (holders.get(runId) === owner) holders.set(runId, null);
        },
        async acquireLease(runId, lease, now, takeOverFrom) {
          const row = await inner.readRun(runId);
          if (row === null) return false;
          const free =
            row.leaseOwner === null ||
            row.leaseUntil < now ||
            row.leaseOwner === lease.owner ||
            row.leaseOwner === takeOverFrom;
          if (!free) return false;
          await null; // the gap between the read and the write, where another caller reads the same free lease
          void inner.releaseLease(runId, holders.get(runId) ?? '');
          void inner.acquireLease(runId, lease, now);
          holders.set(runId, lease.owner);
          return true;
        },
      };
    },
    caughtBy: [LEASE_RACE, APPROVALS],
  },
  {
    breakage: "appends for a writer that lost its lease (ignores the lease's owner)",
    patch: (inner) => ({
      async append(runId, rows, lease, body) {
        const holder = (await inner.readRun(runId))?.leaseOwner;
        return inner.append(runId, rows, { owner: holder ?? lease.owner, until: lease.until }, body);
      },
    }),
    caughtBy: [LEASE_CAS, LEASE_EXPIRY, APPROVALS, PRUNE, LIST],
  },
  {
    breakage: 'judges expiry by its own clock, not the `now` it is given',
    patch: (inner) => ({
      acquireLease: (runId, lease, _now, takeOverFrom) => inner.acquireLease(runId, lease, Date.now(), takeOverFrom),
    }),
    caughtBy: [LEASE_EXPIRY],
  },
  {
    breakage: 'keeps the snapshot written last, not the one with the highest seq',
    patch: (inner) => {
      const latest = new Map<string, StoreRow>();
      return {
        async writeSnapshot(runId, row, lease) {
          await inner.writeSnapshot(runId, row, lease);
          latest.set(runId, row);
        },
        async latestSnapshot(runId) {
          return latest.get(runId) ?? null;
        },
      };
    },
    caughtBy: [SNAPSHOTS, PRUNE],
  },
  { breakage: 'keys ledgers by a plain object', patch: plainObjectLedgers, caughtBy: [IDS] },
  {
    breakage: 'writes the ledger without comparing versions (the last write wins)',
    patch: () => {
      const ledgers = new Map<string, { body: string; version: number }>();
      return {
        readLedger: async (tenantId) => ledgers.get(tenantId) ?? null,
        async writeLedger(tenantId, body) {
          ledgers.set(tenantId, { body, version: (ledgers.get(tenantId)?.version ?? 0) + 1 });
          return true;
        },
      };
    },
    caughtBy: [LEDGER_CAS, LEDGER_CONCURRENT],
  },
  {
    breakage: 'writes learning records without comparing versions (the last write wins)',
    patch: () => {
      const records = new Map<string, { body: string; version: number }>();
      return {
        readLearning: async (key) => records.get(key) ?? null,
        async writeLearning(key, body) {
          records.set(key, { body, version: (records.get(key)?.version ?? 0) + 1 });
          return true;
        },
        listLearning: async () =>
          [...records].map(([key, record]) => ({ key, ...record })).sort((a, b) => (a.key < b.key ? -1 : 1)),
        deleteLearning: async (key) => records.delete(key),
      };
    },
    caughtBy: [LEARNING_CAS, LEARNING_CONCURRENT],
  },
  {
    breakage: 'lists learning records in the order they were written',
    patch: (inner) => ({
      listLearning: async () => {
        const rows = await inner.listLearning();
        const order = ['["b",null]', '["a","t2"]', '["a",null]', '__proto__'];
        return rows.sort((a, b) => order.indexOf(a.key) - order.indexOf(b.key));
      },
    }),
    caughtBy: [LEARNING_LIST],
  },
  {
    breakage: 'says a learning record was deleted and keeps it',
    patch: (inner) => ({ deleteLearning: async (key) => (await inner.readLearning(key)) !== null }),
    caughtBy: [LEARNING_LIST],
  },
  {
    breakage: 'says a cancel was recorded and records nothing',
    patch: (inner) => ({ requestCancel: async (runId) => (await inner.readRun(runId)) !== null }),
    caughtBy: [CANCEL, APPEND_CONTROL],
  },
  {
    breakage: 'ignores setPaused',
    patch: () => ({ setPaused: async () => undefined }),
    caughtBy: [PAUSE, UNICODE, APPEND_CONTROL],
  },
  {
    breakage: 'answers an append with a control that is not the run’s',
    patch: (inner) => ({
      async append(...args) {
        await inner.append(...args);
        return { paused: null, cancelRequested: false };
      },
    }),
    caughtBy: [APPEND_CONTROL],
  },
  {
    breakage: 'says it wrote the snapshot given with an append, and did not',
    patch: (inner) => ({
      async append(runId, rows, lease, runBody, finishedAt, snapshot) {
        const control = await inner.append(runId, rows, lease, runBody, finishedAt);
        return snapshot === undefined || !control ? control : { ...control, snapshotWritten: true };
      },
    }),
    caughtBy: [APPEND_SNAPSHOT],
  },
  {
    breakage: 'writes the snapshot given with an append before its rows, so a refused append leaves it',
    patch: (inner) => ({
      async append(runId, rows, lease, runBody, finishedAt, snapshot) {
        if (snapshot !== undefined) await inner.writeSnapshot(runId, snapshot, lease);
        const control = await inner.append(runId, rows, lease, runBody, finishedAt);
        return snapshot === undefined || !control ? control : { ...control, snapshotWritten: true };
      },
    }),
    caughtBy: [APPEND_SNAPSHOT],
  },
  {
    breakage: 'writes the snapshot given with an append even when it is older than the latest',
    patch: (inner) => {
      // Only the append's snapshots are its own (no other check gives one): the last given wins, whatever its seq.
      const given = new Map<string, StoreRow>();
      return {
        async append(runId, rows, lease, runBody, finishedAt, snapshot) {
          const control = await inner.append(runId, rows, lease, runBody, finishedAt);
          if (snapshot === undefined || !control) return control;
          given.set(runId, snapshot);
          return { ...control, snapshotWritten: true };
        },
        latestSnapshot: async (runId) => given.get(runId) ?? inner.latestSnapshot(runId),
      };
    },
    caughtBy: [APPEND_SNAPSHOT],
  },
  {
    breakage: 'creates a run over an existing one',
    patch: (inner) => ({
      async createRun(runId, body, lease) {
        if ((await inner.readRun(runId)) !== null)
          await inner.append(
            runId,
            [],
            { owner: (await inner.readRun(runId))!.leaseOwner ?? '', until: lease.until },
            body,
          );
        else await inner.createRun(runId, body, lease);
        return true;
      },
    }),
    caughtBy: [RUN_ROWS],
  },
  {
    breakage: 'cuts journal bodies at 65,535 characters',
    patch: (inner) => ({
      append: (runId, rows, lease, body) =>
        inner.append(
          runId,
          rows.map((row) => ({ ...row, body: row.body.slice(0, 65_535) })),
          lease,
          body,
        ),
    }),
    caughtBy: [LARGE, PRUNE, LIST],
  },
  {
    breakage: 'stores run bodies without astral characters (a 3-byte UTF-8 column)',
    patch: (inner) => ({
      readRun: async (runId) => {
        const row = await inner.readRun(runId);
        return row === null ? null : { ...row, body: withoutAstral(row.body) };
      },
    }),
    caughtBy: [UNICODE],
  },
  {
    breakage: 'prunes every finished run, whatever the time given',
    patch: (inner) => ({
      async prune() {
        let deleted = 0;
        for (const runId of ['old', 'recent', 'waiting'])
          if ((await inner.readRun(runId)) !== null) deleted += await inner.prune({ finishedBefore: Infinity });
        return deleted;
      },
    }),
    caughtBy: [PRUNE],
  },
  {
    breakage: 'lists runs in UTF-16 order, not by code point',
    patch: (inner) => ({
      async listRuns(options) {
        const all = await inner.listRuns!({ limit: 1_000 });
        return all
          .sort((a, b) => (a.runId < b.runId ? -1 : 1))
          .filter((run) => options.after === undefined || run.runId > options.after)
          .slice(0, options.limit);
      },
    }),
    caughtBy: [LIST],
  },
  {
    breakage: 'ignores `after` (every page is the first)',
    patch: (inner) => ({ listRuns: ({ limit }) => inner.listRuns!({ limit }) }),
    caughtBy: [LIST],
  },
  { breakage: 'has no listRuns', patch: () => ({ listRuns: undefined }), caughtBy: [LIST] },
];

describe('storeContract', () => {
  it('passes a real memoryStore behind a wrapper that changes nothing (the wrapper is sound)', async () => {
    expect([...(await failures(brokenStore(() => ({}))))].map(([name]) => name)).toEqual([]);
  });

  it.each(breakages)('catches a store that $breakage', async ({ patch, caughtBy }) => {
    const failed = await failures(brokenStore(patch));
    expect([...failed.keys()].sort()).toEqual(caughtBy.map(named).sort());
    for (const [name, error] of failed) {
      expect(error).toBeInstanceOf(StoreContractError);
      expect(error).toMatchObject({ code: 'store_contract_violated', check: name, name: 'StoreContractError' });
      expect((error as Error).message).toMatch(
        new RegExp(
          `^store contract check "${name.replace(/[.*+?^${}()|[\]\\]/g, '\\$&')}" failed: .+: expected .+, got .+`,
        ),
      );
    }
  });

  it('says which step broke and what was expected against what came', async () => {
    const failed = await failures(brokenStore(breakages[0]!.patch));
    const error = failed.get(named(JOURNAL_ORDER)) as StoreContractError;
    expect(error.message).toContain('readJournal(runId, 0) after appending seqs 1 to 6');
    expect(error.expected).toContain('{"body":"{\\"seq\\":2}","kind":"event","seq":2}');
    expect(error.actual).not.toContain('"seq":2}');
  });

  it('tells a long text that differs by its length and where it starts to differ', async () => {
    const failed = await failures(brokenStore(breakages.find(({ breakage }) => breakage.startsWith('cuts'))!.patch));
    const error = failed.get(named(LARGE)) as StoreContractError;
    expect(error.actual).toMatch(/^65535 characters differing from index 65535/);
    expect(error.expected).toBe('the 70000 characters written');
  });

  it('fails a check whose store throws, with the thrown error as cause', async () => {
    const boom = new Error('disk full');
    const failed = await failures(
      brokenStore(() => ({
        readJournal: async () => {
          throw boom;
        },
      })),
    );
    const error = failed.get(named(JOURNAL_ORDER)) as StoreContractError;
    expect(error.actual).toBe('it threw Error: disk full');
    expect(error.cause).toBe(boom);
  });

  it('fails a check whose store answers in the wrong shape, never with a bare TypeError', async () => {
    const failed = await failures(brokenStore(() => ({ readJournal: async () => undefined as unknown as StoreRow[] })));
    const error = failed.get(named(JOURNAL_ORDER));
    expect(error).toBeInstanceOf(StoreContractError);
    expect((error as StoreContractError).cause).toBeInstanceOf(TypeError);
  });

  it('closes each store and calls cleanup after it, when the check passes and when it fails', async () => {
    const events: string[] = [];
    const make = brokenStore((inner) => ({
      setPaused: async () => undefined,
      close: async () => {
        events.push('close');
        await inner.close();
      },
    }));
    const checks = storeContract(make, { ...SMALL, cleanup: () => void events.push('cleanup') });
    await checks.find((check) => check.name === named(CANCEL))!.run();
    await expect(checks.find((check) => check.name === named(PAUSE))!.run()).rejects.toBeInstanceOf(StoreContractError);
    expect(events).toEqual(['close', 'cleanup', 'close', 'cleanup']);
  });

  it('fails a check whose store cannot close, and still calls cleanup', async () => {
    let cleaned = 0;
    const [check] = storeContract(
      brokenStore(() => ({
        close: async () => {
          throw new Error('pool stuck');
        },
      })),
      { cleanup: () => void cleaned++ },
    );
    await expect(check!.run()).rejects.toMatchObject({
      code: 'store_contract_violated',
      actual: 'it threw Error: pool stuck',
    });
    expect(cleaned).toBe(1);
  });

  it('fails with StoreContractError when makeStore throws or gives something that is not a store', async () => {
    const [throwing] = storeContract(() => {
      throw new Error('no database');
    });
    await expect(throwing!.run()).rejects.toMatchObject({
      code: 'store_contract_violated',
      expected: 'a new store',
      actual: 'it threw Error: no database',
    });
    const [empty] = storeContract(async () => ({}) as Store);
    await expect(empty!.run()).rejects.toMatchObject({
      code: 'store_contract_violated',
      expected: 'an object with the Store methods',
      actual: '{}',
    });
  });

  it('refuses bad arguments before any check runs, naming each field', () => {
    const issues = (run: () => unknown) => {
      try {
        run();
      } catch (error) {
        expect(error).toBeInstanceOf(LoopConfigError);
        return (error as LoopConfigError).issues.map((issue) => issue.path);
      }
      throw new Error('not refused');
    };
    expect(issues(() => storeContract(memoryStore() as never))).toEqual(['makeStore']);
    expect(
      issues(() =>
        storeContract(() => memoryStore(), { cleanup: 'rm -rf' as never, largeRecordChars: 10, concurrency: 1 }),
      ),
    ).toEqual(['cleanup', 'largeRecordChars', 'concurrency']);
  });

  it('names every check uniquely, so a runner shows each one', () => {
    expect(new Set(names).size).toBe(names.length);
    expect(names.length).toBe(26);
  });
});
