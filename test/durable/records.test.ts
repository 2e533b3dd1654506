/** Persisted records are refused whole when truncated, corrupt or from a newer schema: never half-read. */
import { mkdtempSync, rmSync } from 'node:fs';
import { createRequire } from 'node:module';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type BetterSqlite3 from 'better-sqlite3';
import { afterAll, describe, expect, it } from 'vitest';
import { z } from 'zod';
import { createLoop, defineTool, StoreRecordError } from 'loopstate';
import { sqliteStore } from 'loopstate/sqlite';
import { scriptedModel, toolCall, virtualClock } from 'loopstate/testing';
import { randomBytes } from 'node:crypto';
import { deflateRawSync } from 'node:zlib';
import { unpack, unpackRows, type PackedRow } from '../../src/adapters/sqlite/row-packing.js';
import { CURRENT_DICTIONARY, RECORD_DICTIONARIES } from '../../src/adapters/sqlite/record-dictionary.js';
import { RECORD_SCHEMA_VERSION } from '../../src/engine/durable/records.js';

const Database = createRequire(import.meta.url)('better-sqlite3') as typeof BetterSqlite3;
const scratch = mkdtempSync(join(tmpdir(), 'loopstate-records-'));
afterAll(() => rmSync(scratch, { recursive: true, force: true }));

/** A run stopped for approval (its journal and metadata on disk), and a way to damage one record. */
async function stoppedRun(name: string) {
  const path = join(scratch, `${name}.db`);
  const tool = defineTool({
    name: 'wipe',
    description: 'Wipe',
    input: z.object({ id: z.string() }),
    access: 'destructive',
    execute: () => 'wiped',
  });
  const make = () =>
    createLoop({
      model: scriptedModel([toolCall('wipe', { id: 'X' })]),
      tools: [tool],
      clock: virtualClock(),
      store: sqliteStore({ path }),
    });
  const stopped = await make().run({ goal: 'wipe X', runId: 'r' });
  const db = new Database(path);
  unpackAll(db);
  return { make, stopped, db };
}

/** Rewrites the store's packed rows as text, so a test can damage their JSON with SQL. */
function unpackAll(db: BetterSqlite3.Database): void {
  for (const table of ['runs', 'snapshots']) {
    const seq = table === 'runs' ? 'NULL' : 'seq';
    const rows = db
      .prepare(`SELECT rowid, run_id, ${seq} AS seq, body, packed FROM ${table} WHERE packed IS NOT NULL`)
      .all() as {
      rowid: number;
      run_id: string;
      seq: number | null;
      body: string;
      packed: Buffer;
    }[];
    for (const row of rows)
      db.prepare(`UPDATE ${table} SET body = ?, packed = NULL WHERE rowid = ?`).run(
        unpack(row.run_id, row.seq, row.body, row.packed),
        row.rowid,
      );
  }
  // Journal rows of a commit group are read through the group's first row: all are read before any is rewritten.
  const journal = db
    .prepare('SELECT run_id, seq, kind, body, packed FROM journal ORDER BY run_id, seq')
    .all() as (PackedRow & { run_id: string })[];
  const bodies = journal.map(
    (row) =>
      unpackRows(row.run_id, [row], (seq) =>
        journal.find((other) => other.run_id === row.run_id && other.seq === seq),
      )[0]!.body,
  );
  journal.forEach((row, index) =>
    db
      .prepare('UPDATE journal SET body = ?, packed = NULL WHERE run_id = ? AND seq = ?')
      .run(bodies[index], row.run_id, row.seq),
  );
}

async function refusal(promise: Promise<unknown>): Promise<StoreRecordError> {
  const error = await promise.then(
    () => null,
    (thrown: unknown) => thrown,
  );
  if (!(error instanceof StoreRecordError)) throw new Error(`expected a StoreRecordError, got ${String(error)}`);
  return error;
}

describe('record envelopes', () => {
  it('refuses a truncated journal record, naming the run and seq', async () => {
    const { make, stopped, db } = await stoppedRun('truncated');
    // Seq 3: the first reply's event (the reply's own record, seq 2, was committed with it, so not written).
    db.prepare("UPDATE journal SET body = substr(body, 1, length(body) / 2) WHERE run_id = 'r' AND seq = 3").run();
    const error = await refusal(
      make().resume('r', { approvals: { [stopped.pendingApprovals[0]!.callId]: { approve: true } } }),
    );
    expect(error).toMatchObject({ code: 'corrupt_record', runId: 'r', seq: 3 });
    expect(error.message).toMatch(/journal record at seq 3 of run r: not valid JSON/);
  });

  it('refuses a record of the wrong shape, naming the field', async () => {
    const { make, stopped, db } = await stoppedRun('corrupt');
    db.prepare("UPDATE journal SET body = json_set(body, '$.event.at', 'soon') WHERE run_id = 'r' AND seq = 1").run();
    const error = await refusal(
      make().resume('r', { approvals: { [stopped.pendingApprovals[0]!.callId]: { approve: true } } }),
    );
    expect(error).toMatchObject({ code: 'corrupt_record', seq: 1 });
    expect(error.problem).toMatch(/event\.at/);
  });

  it('refuses a record moved to another seq', async () => {
    const { make, stopped, db } = await stoppedRun('moved');
    db.prepare("UPDATE journal SET body = json_set(body, '$.seq', 7) WHERE run_id = 'r' AND seq = 1").run();
    const error = await refusal(
      make().resume('r', { approvals: { [stopped.pendingApprovals[0]!.callId]: { approve: true } } }),
    );
    expect(error.problem).toMatch(/not where it is stored/);
  });

  it('refuses a record from a newer schema version', async () => {
    const { make, db } = await stoppedRun('future');
    const newer = RECORD_SCHEMA_VERSION + 1;
    db.prepare(`UPDATE runs SET body = json_set(body, '$.schemaVersion', ${newer}) WHERE run_id = 'r'`).run();
    const error = await refusal(make().resume('r'));
    expect(error).toMatchObject({ code: 'unsupported_record_version', runId: 'r', seq: null });
    expect(error.message).toContain(
      `schemaVersion ${newer} is newer than this loopstate reads (${RECORD_SCHEMA_VERSION})`,
    );
  });

  it('refuses a damaged snapshot', async () => {
    const path = join(scratch, 'snapshot.db');
    const tool = defineTool({
      name: 'look',
      description: 'Look',
      input: z.object({ n: z.number() }),
      access: 'read',
      execute: ({ n }) => n,
    });
    const steps = [1, 2, 3].map((n) => toolCall('look', { n }));
    const hang = () => new Promise<never>(() => undefined);
    const loop = createLoop({
      model: scriptedModel([...steps, hang]),
      tools: [tool],
      clock: virtualClock(),
      store: sqliteStore({ path }),
      // maxUncommittedSteps 1: a commit before every model call (the journal these cases hang or crash on).
      durable: { snapshotEvery: 2, maxUncommittedSteps: 1 },
    });
    void loop.run({ goal: 'look', runId: 'r' });
    await new Promise((resolve) => setTimeout(resolve, 100));
    const db = new Database(path);
    expect(db.prepare("SELECT count(*) AS n FROM snapshots WHERE run_id = 'r'").get()).toEqual({ n: 1 });
    unpackAll(db);
    db.prepare("UPDATE snapshots SET body = json_remove(body, '$.session.fields') WHERE run_id = 'r'").run();
    // The hung run stands for a dead process: its lease is freed.
    db.prepare("UPDATE runs SET lease_owner = NULL WHERE run_id = 'r'").run();
    const resumer = createLoop({
      model: scriptedModel([]),
      tools: [tool],
      clock: virtualClock(),
      store: sqliteStore({ path }),
    });
    const error = await refusal(resumer.resume('r'));
    expect(error.problem).toMatch(/session\.fields/);
  });
});

describe('sqliteStore packed rows', () => {
  it('stores a long record deflated and reads it back as written; a short one stays text', async () => {
    const { db, make, stopped } = await stoppedRun('packed-kept');
    db.close();
    const reopened = new Database(join(scratch, 'packed-kept.db'));
    // stoppedRun unpacked them: a fresh run writes them packed.
    const store = sqliteStore({ path: join(scratch, 'packed-fresh.db') });
    const body = JSON.stringify({ schemaVersion: 3, kind: 'event', filler: 'x'.repeat(1_000) });
    expect(await store.createRun('p', '{}', { owner: 'me', until: Date.now() + 60_000 })).toBe(true);
    await store.append(
      'p',
      [
        { seq: 1, kind: 'event', body },
        { seq: 2, kind: 'intent', body: '{"short":1}' },
      ],
      {
        owner: 'me',
        until: Date.now() + 60_000,
      },
    );
    expect(await store.readJournal('p', 0)).toEqual([
      { seq: 1, kind: 'event', body },
      { seq: 2, kind: 'intent', body: '{"short":1}' },
    ]);
    await store.close();
    const raw = new Database(join(scratch, 'packed-fresh.db'));
    const rows = raw.prepare("SELECT seq, body, packed FROM journal WHERE run_id = 'p' ORDER BY seq").all() as {
      seq: number;
      body: string;
      packed: Buffer | null;
    }[];
    expect(rows[0]!.body).toBe('');
    expect(rows[0]!.packed!.length).toBeLessThan(body.length / 10);
    expect(rows[1]).toEqual({ seq: 2, body: '{"short":1}', packed: null });
    raw.close();
    // The unpacked (text) rows of stoppedRun still resume: text and packed rows are read alike.
    const resumed = await make().resume('r', {
      approvals: { [stopped.pendingApprovals[0]!.callId]: { approve: true } },
    });
    expect(resumed.runId).toBe('r');
    reopened.close();
  });

  it('deflates the long journal rows of one append together, chunks alone, and reads each back from any seq', async () => {
    const path = join(scratch, 'packed-group.db');
    const store = sqliteStore({ path });
    const lease = { owner: 'me', until: Date.now() + 60_000 };
    const long = (seq: number, kind: string) =>
      JSON.stringify({ schemaVersion: 4, kind, runId: 'g', seq, filler: `${kind} ${seq} `.repeat(60), é: '→' });
    const rows = [
      { seq: 1, kind: 'event', body: long(1, 'event') },
      { seq: 2, kind: 'intent', body: '{"short":2}' },
      { seq: 3, kind: 'event', body: long(3, 'event') },
      { seq: 4, kind: 'trace', body: long(4, 'trace') },
      { seq: 5, kind: 'tool-result', body: long(5, 'tool-result') },
    ];
    expect(await store.createRun('g', '{}', lease)).toBe(true);
    await store.append('g', rows, lease);
    await store.append('g', [{ seq: 6, kind: 'event', body: long(6, 'event') }], lease);
    const fields = (read: readonly { seq: number; kind: string; body: string }[]) =>
      read.map(({ seq, kind, body }) => ({ seq, kind, body }));
    const all = [...rows, { seq: 6, kind: 'event', body: long(6, 'event') }];
    expect(fields(await store.readJournal('g', 0))).toEqual(all);
    // Rows whose group's first row (seq 1) is not among those read: it is read for them.
    expect(fields(await store.readJournal('g', 2))).toEqual(all.slice(2));
    expect(fields(await store.readJournal('g', 3, ['tool-result']))).toEqual([all[4]]);
    expect(fields(await store.readJournal('g', 0, ['trace']))).toEqual([all[3]]);
    // Read before the store closes, their bodies read after: the group's first row was fetched with them.
    const readEarly = await store.readJournal('g', 2);
    await store.close();
    expect(fields(readEarly)).toEqual(all.slice(2));
    const raw = new Database(path);
    const stored = raw.prepare("SELECT seq, body, packed FROM journal WHERE run_id = 'g' ORDER BY seq").all() as {
      seq: number;
      body: string;
      packed: Buffer | null;
    }[];
    raw.close();
    // One deflate for the commit's long journal rows: the first holds the group, the others point back to it.
    expect(stored.map((row) => [row.seq, row.packed?.[0] ?? 'text'])).toEqual([
      [1, 128 + CURRENT_DICTIONARY],
      [2, 'text'],
      [3, 0],
      [4, CURRENT_DICTIONARY],
      [5, 0],
      [6, CURRENT_DICTIONARY],
    ]);
    expect(stored[2]!.packed!.length).toBeLessThan(4);
    expect(stored[0]!.packed!.length).toBeLessThan((rows[0]!.body.length + rows[2]!.body.length) / 5);
  });

  it('packs a group whose bodies, joined, would pair a lone high surrogate with the next body’s low one', async () => {
    const path = join(scratch, 'packed-surrogates.db');
    const store = sqliteStore({ path });
    const lease = { owner: 'me', until: Date.now() + 60_000 };
    // Each body's UTF-8 is its own: a lone surrogate is written as U+FFFD, as in a row packed alone.
    const first = `${'a'.repeat(250)}\uD83D`,
      second = `\uDE00${'b'.repeat(250)}`;
    expect(await store.createRun('s', '{}', lease)).toBe(true);
    await store.append(
      's',
      [
        { seq: 1, kind: 'event', body: first },
        { seq: 2, kind: 'event', body: second },
      ],
      lease,
    );
    await store.close();
    const reopened = sqliteStore({ path });
    const read = (await reopened.readJournal('s', 0)).map(({ seq, body }) => ({ seq, body }));
    const readSecond = (await reopened.readJournal('s', 1)).map(({ seq, body }) => ({ seq, body }));
    await reopened.close();
    const written = (body: string) => Buffer.from(body, 'utf8').toString('utf8');
    expect(read).toEqual([
      { seq: 1, body: written(first) },
      { seq: 2, body: written(second) },
    ]);
    expect(readSecond).toEqual([{ seq: 2, body: written(second) }]);
  });

  it('packs new rows with the current dictionary and reads rows packed with an earlier one beside them', async () => {
    expect(CURRENT_DICTIONARY).toBe(2);
    const path = join(scratch, 'dictionaries.db');
    const store = sqliteStore({ path });
    const lease = { owner: 'me', until: Date.now() + 60_000 };
    const long = (seq: number) => JSON.stringify({ kind: 'event', seq, filler: `event ${seq} `.repeat(40) });
    await store.createRun('d', '{}', lease);
    await store.append('d', [{ seq: 1, kind: 'event', body: long(1) }], lease);
    await store.append(
      'd',
      [
        { seq: 3, kind: 'event', body: long(3) },
        { seq: 4, kind: 'event', body: long(4) },
      ],
      lease,
    );
    // Rows as an earlier loopstate packed them: alone (first byte 1) and a group head (128 + 1) with its member.
    const earlier = (bodies: string[]) =>
      deflateRawSync(Buffer.from(bodies.join(''), 'utf8'), {
        dictionary: Buffer.from(RECORD_DICTIONARIES[1]!, 'utf8'),
      });
    const db = new Database(path);
    const firstBytes = (db.prepare('SELECT packed FROM journal ORDER BY id').all() as { packed: Buffer }[]).map(
      (row) => row.packed[0],
    );
    expect(firstBytes).toEqual([CURRENT_DICTIONARY, 128 + CURRENT_DICTIONARY, 0]);
    const insert = db.prepare(
      "INSERT INTO journal (id, run_id, kind, body, packed) VALUES ((SELECT number FROM runs WHERE run_id = 'd') * 4294967296 + ?, 'd', 'event', '', ?)",
    );
    insert.run(5, Buffer.concat([Buffer.from([1]), earlier([long(5)])]));
    const [six, seven] = [long(6), long(7)];
    // The group's head: the count, then each body's UTF-8 length (LEB128 varints: these are 128–16,383 bytes).
    const varint = (value: number) => [(value & 0x7f) | 0x80, value >> 7];
    insert.run(
      6,
      Buffer.concat([
        Buffer.from([129, 2, ...varint(Buffer.byteLength(six)), ...varint(Buffer.byteLength(seven))]),
        earlier([six, seven]),
      ]),
    );
    insert.run(7, Buffer.from([0, 1, 1]));
    db.close();
    const rows = await store.readJournal('d', 0);
    expect(rows.map((row) => [row.seq, row.body])).toEqual([1, 3, 4, 5, 6, 7].map((seq) => [seq, long(seq)]));
    await store.close();
  });

  it('reads back rows whose deflated form spans several of zlib output buffers (incompressible, under 16 K chars)', async () => {
    const store = sqliteStore({ path: join(scratch, 'incompressible.db') });
    const lease = { owner: 'me', until: Date.now() + 60_000 };
    const noise = (seq: number) =>
      JSON.stringify({ kind: 'event', seq, noise: randomBytes(11_000).toString('base64') }).slice(0, 16_000);
    const rows = [1, 2, 3].map((seq) => ({ seq, kind: 'event', body: noise(seq) }));
    await store.createRun('n', '{}', lease);
    await store.append('n', rows.slice(0, 1), lease); // alone
    await store.append('n', rows.slice(1), lease); // a group
    const snapshot = noise(4);
    await store.writeSnapshot('n', { seq: 3, kind: 'snapshot', body: snapshot }, lease);
    expect((await store.readJournal('n', 0)).map((row) => row.body)).toEqual(rows.map((row) => row.body));
    expect((await store.latestSnapshot('n'))?.body).toBe(snapshot);
    // Each row's packed form is longer than one 4 KiB output buffer of zlib's (the case put together from several).
    const db = new Database(join(scratch, 'incompressible.db'));
    const sizes = (db.prepare('SELECT length(packed) AS size FROM journal').all() as { size: number }[]).map(
      (row) => row.size,
    );
    db.close();
    expect(Math.min(...sizes.filter((size) => size > 8))).toBeGreaterThan(8_000);
    await store.close();
  });

  it('refuses a row of a commit group whose group is missing, cut short or of other lengths', async () => {
    const long = (seq: number) => JSON.stringify({ kind: 'event', seq, filler: `event ${seq} `.repeat(40) });
    for (const [name, damage, problem, seq] of [
      ['group-missing', 'DELETE FROM journal WHERE seq = 1', /commit group's first row \(seq 1\) is missing/, 3],
      ['group-cut', 'UPDATE journal SET packed = substr(packed, 1, 8) WHERE seq = 1', /does not inflate/, 1],
      // The first body's length changed (its low seven bits): the bodies no longer add up to what inflates.
      [
        'group-lengths',
        "UPDATE journal SET packed = unhex(substr(hex(packed), 1, 2) || '02FF' || substr(hex(packed), 7)) WHERE seq = 1",
        /not the \d+ its lengths say/,
        1,
      ],
      ['member-place', "UPDATE journal SET packed = unhex('000207') WHERE seq = 3", /no body at place 7/, 3],
    ] as const) {
      const path = join(scratch, `${name}.db`);
      const store = sqliteStore({ path });
      const lease = { owner: 'me', until: Date.now() + 60_000 };
      await store.createRun('g', '{}', lease);
      await store.append(
        'g',
        [
          { seq: 1, kind: 'event', body: long(1) },
          { seq: 3, kind: 'event', body: long(3) },
        ],
        lease,
      );
      await store.close();
      const db = new Database(path);
      db.prepare(damage).run();
      db.close();
      const reopened = sqliteStore({ path });
      const read = await reopened.readJournal('g', 0);
      const error = (() => {
        try {
          for (const row of read) void row.body;
        } catch (thrown) {
          return thrown;
        }
        return null;
      })();
      await reopened.close();
      expect(error, name).toBeInstanceOf(StoreRecordError);
      expect(error, name).toMatchObject({ code: 'corrupt_record', runId: 'g', seq });
      expect((error as StoreRecordError).problem, name).toMatch(problem);
    }
  });

  it('refuses a packed row that does not inflate, and one packed with a dictionary it does not have', async () => {
    for (const [name, damage] of [
      ['packed-truncated', (packed: Buffer) => packed.subarray(0, packed.length / 2)],
      ['packed-unknown', (packed: Buffer) => Buffer.concat([Buffer.from([9]), packed.subarray(1)])],
    ] as const) {
      const path = join(scratch, `${name}.db`);
      const tool = defineTool({
        name: 'look',
        description: 'Look',
        input: z.object({ n: z.number() }),
        access: 'read',
        execute: ({ n }) => n,
      });
      const loop = (model: ReturnType<typeof scriptedModel>) =>
        createLoop({ model, tools: [tool], clock: virtualClock(), store: sqliteStore({ path }) });
      const hang = () => new Promise<never>(() => undefined);
      void loop(scriptedModel([toolCall('look', { n: 1 }), hang])).run({ goal: 'look', runId: 'r' });
      await new Promise((resolve) => setTimeout(resolve, 100));
      const db = new Database(path);
      const { seq, packed } = db
        // A row the resume reads: the transcript chunk of the snapshot taken in the hanging call's wait (the events
        // before it are not read), or without one the first event.
        .prepare(
          "SELECT seq, packed FROM journal WHERE run_id = 'r' AND packed IS NOT NULL ORDER BY kind = 'transcript' DESC, seq LIMIT 1",
        )
        .get() as { seq: number; packed: Buffer };
      db.prepare("UPDATE journal SET packed = ? WHERE run_id = 'r' AND seq = ?").run(damage(packed), seq);
      db.prepare("UPDATE runs SET lease_owner = NULL WHERE run_id = 'r'").run();
      db.close();
      const error = await refusal(loop(scriptedModel([])).resume('r'));
      expect(error).toMatchObject({ code: 'corrupt_record', runId: 'r', seq });
      expect(error.problem).toMatch(name === 'packed-truncated' ? /does not inflate/ : /dictionary 9/);
    }
  });
});

describe('sqliteStore', () => {
  it('keeps its file in WAL mode (synchronous and the size limits are set per connection)', async () => {
    for (const durability of ['normal', 'full'] as const) {
      const path = join(scratch, `pragmas-${durability}.db`);
      const store = sqliteStore({ path, durability });
      await store.readRun('none');
      await store.close();
      const db = new Database(path);
      expect(db.pragma('journal_mode', { simple: true })).toBe('wal');
      db.close();
    }
  });

  it('refuses bad options before opening anything', () => {
    expect(() => sqliteStore({ path: '' })).toThrow(/path: expected a file path/);
    expect(() => sqliteStore({ path: 'x.db', durability: 'extra' as 'full' })).toThrow(
      /durability: expected "normal" or "full"/,
    );
  });
});
