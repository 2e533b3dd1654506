/**
 * A stop's run record names the journal's last transcript chunk (written with the stop) instead of holding the
 * messages a second time (record schema 6). Read back — `loop.resume` of a finished or waiting run, `loopstate runs
 * show` — the result has exactly the live result's messages: under a context ceiling (the transcript replaced),
 * over two tasks, at an approval stop (the notes answering the open call) and after it, and through redaction. A
 * chunk the record names that is missing or damaged is refused, naming its seq, with nothing else lost.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { createRequire } from 'node:module';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import type BetterSqlite3 from 'better-sqlite3';
import { afterAll, describe, expect, it } from 'vitest';
import { z } from 'zod';
import {
  createLoop,
  defineTool,
  evaluators,
  memoryStore,
  StoreRecordError,
  type Model,
  type ModelRequest,
  type Store,
} from 'loopstate';
import { listStoredRuns } from 'loopstate/internal';
import { sqliteStore } from 'loopstate/sqlite';
import { reply, scriptedModel, toolCall, virtualClock } from 'loopstate/testing';
import { runCli } from '../../src/tooling/cli/run-cli.js';
import config, { SECRET } from '../fixtures/console/secret-loop.js';

const Database = createRequire(import.meta.url)('better-sqlite3') as typeof BetterSqlite3;
const scratch = mkdtempSync(join(tmpdir(), 'loopstate-result-messages-'));
afterAll(() => rmSync(scratch, { recursive: true, force: true }));

interface StoredRecord {
  schemaVersion: number;
  state: string;
  result: { messages: unknown[] };
  resultMessages?: { seq: number; from: number; messages: number; closing: unknown[] };
}

const recordOf = async (store: Store, runId: string): Promise<StoredRecord> =>
  JSON.parse((await store.readRun(runId))!.body) as StoredRecord;

/** Lookups whose results are long: under a ceiling of 500 tokens the conversation is trimmed (replaced) as it goes. */
const long = defineTool({
  name: 'lookup',
  description: 'Look a key up',
  input: z.object({ key: z.string() }),
  access: 'read',
  idempotent: true,
  execute: ({ key }) => `value ${key} `.repeat(40),
});

const trimmingModel: Model = {
  id: 'scripted',
  generate(request: ModelRequest) {
    const usage = { inputTokens: 10, outputTokens: 2 };
    const last = [...request.messages].reverse().find((message) => message.role === 'tool');
    const n = last === undefined ? 0 : Number(/value k(\d+)/.exec(last.content)?.[1] ?? 0) + 1;
    if (n >= 12) return Promise.resolve({ text: 'done', toolCalls: [], usage });
    return Promise.resolve({
      text: null,
      toolCalls: [{ id: `c${n}`, name: 'lookup', arguments: JSON.stringify({ key: `k${n}` }) }],
      usage,
    });
  },
};

const ceilingLoop = (store: Store) =>
  createLoop({
    model: trimmingModel,
    tools: [long],
    store,
    clock: virtualClock(),
    durable: { snapshotEvery: 2 },
    limits: { maxSteps: 20, maxToolCalls: 20 },
    context: { maxInputTokensPerCall: 500, keepTurns: 1 },
  });

/** The same lookups, short, without a ceiling: the stop's chunk continues the chunks before it. */
const plainLoop = (store: Store) =>
  createLoop({
    model: trimmingModel,
    tools: [
      defineTool({
        name: 'lookup',
        description: 'Look a key up',
        input: z.object({ key: z.string() }),
        access: 'read',
        idempotent: true,
        execute: ({ key }) => `value ${key}`,
      }),
    ],
    store,
    clock: virtualClock(),
    durable: { snapshotEvery: 2 },
    limits: { maxSteps: 20, maxToolCalls: 20 },
  });

describe('a stop’s run record refers to the transcript in the journal', () => {
  it('under a context ceiling (a replaced transcript), on a SQLite file: read back, the messages are the live ones', async () => {
    const path = join(scratch, 'ceiling.db');
    const store = sqliteStore({ path });
    const live = await ceilingLoop(store).run({ goal: 'go', runId: 'r' });
    expect(live.stopReason, live.detail).toBe('completed');
    // The transcript was replaced on the way (a trimmed conversation), so the chain's whole chunk is not the first.
    const chunks = (await store.readJournal('r', 0, ['transcript'])).map(
      (row) => JSON.parse(row.body) as { seq: number; previous: number; change: { replace: boolean } },
    );
    expect(chunks.some((chunk) => chunk.change.replace && chunk.previous > 0)).toBe(true);
    const record = await recordOf(store, 'r');
    expect(record.schemaVersion).toBe(6);
    // The history is stored once: the record names the chunk written with the stop, its messages are not in it.
    expect(record.result.messages).toEqual([]);
    expect(record.resultMessages).toMatchObject({
      seq: chunks.at(-1)!.seq,
      messages: live.messages.length,
      closing: [],
    });
    expect(record.resultMessages!.from).toBeGreaterThan(1);
    await store.close();
    // Another process's store and loop.
    const reopened = sqliteStore({ path });
    const read = await ceilingLoop(reopened).resume('r');
    await reopened.close();
    expect(read.messages).toEqual(live.messages);
    expect(read.trace).toEqual(live.trace);
  });

  it('over two tasks (the second task’s transcript replaces the first’s)', async () => {
    const store = memoryStore();
    const loop = () =>
      createLoop({
        model: scriptedModel([
          toolCall('lookup', { key: 'A' }),
          reply('{"found":"A"}'),
          toolCall('lookup', { key: 'B' }),
          reply('{"report":"A and B"}'),
        ]),
        tools: [long],
        store,
        clock: virtualClock(),
        durable: { snapshotEvery: 1 },
        tasks: [
          { id: 'collect', prompt: 'Collect A', evaluate: evaluators.schema(z.object({ found: z.string() })) },
          {
            id: 'report',
            prompt: ({ outputs }) => `Report on ${JSON.stringify(outputs)}`,
            evaluate: evaluators.schema(z.object({ report: z.string() })),
          },
        ],
      });
    const live = await loop().run({ goal: 'go', runId: 'w' });
    expect(live.stopReason, live.detail).toBe('completed');
    expect(live.messages.some((message) => message.content?.includes('Report on'))).toBe(true);
    const record = await recordOf(store, 'w');
    expect(record.result.messages).toEqual([]);
    expect(record.resultMessages?.messages).toBe(live.messages.length);
    expect((await loop().resume('w')).messages).toEqual(live.messages);
  });

  it('at an approval stop (the open call answered with a note) and after the approval', async () => {
    const store = memoryStore();
    const refund = defineTool({
      name: 'refund',
      description: 'Refund an order.',
      input: z.object({ order_id: z.string() }),
      access: 'destructive',
      execute: ({ order_id }) => ({ refunded: order_id }),
    });
    const loop = createLoop({
      model: scriptedModel([toolCall('refund', { order_id: 'O-7' }), reply('Refunded O-7.')]),
      tools: [refund],
      store,
      clock: virtualClock(),
      durable: { snapshotEvery: 1 },
    });
    const stopped = await loop.run({ goal: 'Refund O-7', runId: 'a' });
    expect(stopped.status).toBe('needs_human');
    const waiting = await recordOf(store, 'a');
    expect(waiting.state).toBe('waiting');
    expect(waiting.result.messages).toEqual([]);
    // The note answering the call the stop left open is kept as written, after the transcript's messages.
    expect(waiting.resultMessages?.closing).toEqual([stopped.messages.at(-1)]);
    expect(stopped.messages.at(-1)).toMatchObject({ role: 'tool' });
    expect((await loop.resume('a')).messages).toEqual(stopped.messages);
    const [pending] = stopped.pendingApprovals;
    const done = await loop.resume('a', { approvals: { [pending!.callId]: { approve: true } } });
    expect(done.stopReason).toBe('completed');
    const finished = await recordOf(store, 'a');
    expect(finished.result.messages).toEqual([]);
    expect(finished.resultMessages).toMatchObject({ messages: done.messages.length, closing: [] });
    expect((await loop.resume('a')).messages).toEqual(done.messages);
  });

  it('loopstate runs show prints the stored messages through the loop’s redaction', async () => {
    const db = join(scratch, 'secret.db');
    const store = sqliteStore({ path: db });
    const loop = createLoop({ ...config, store, durable: { snapshotEvery: 1 } });
    await loop.run({ goal: `Refund order O-5 with key ${SECRET}`, runId: 'run-O-5' });
    const live = await loop.resume('run-O-5', { approvals: { 'call-O-5': { approve: true } } });
    expect(live.stopReason, live.detail).toBe('completed');
    expect((await recordOf(store, 'run-O-5')).resultMessages?.messages).toBe(live.messages.length);
    await store.close();
    const printed: string[] = [];
    const code = await runCli(
      ['runs', resolve('test/fixtures/console/secret-loop.ts'), '--store', db, 'show', 'run-O-5', '--json'],
      { out: (text) => printed.push(text), err: (text) => printed.push(text) },
    );
    expect(code, printed.join('\n')).toBe(0);
    const shown = JSON.parse(printed.join('\n')) as { result: { messages: { role: string; content: string }[] } };
    expect(shown.result.messages.map((message) => message.role)).toEqual(live.messages.map((message) => message.role));
    // Those without the key are printed as they are; those with it, redacted.
    shown.result.messages.forEach((message, index) => {
      const original = live.messages[index]!;
      if (JSON.stringify(original).includes(SECRET)) expect(JSON.stringify(message)).toContain('[redacted]');
      else expect(message).toEqual(JSON.parse(JSON.stringify(original)));
    });
    expect(printed.join('\n')).not.toContain(SECRET);
  });

  it('a run shorter than a snapshot keeps its few messages in its record (no chain to name, no row of their own)', async () => {
    const store = memoryStore();
    const loop = () =>
      createLoop({
        model: scriptedModel([toolCall('lookup', { key: 'A' }), reply('done')]),
        tools: [long],
        store,
        clock: virtualClock(),
      });
    const live = await loop().run({ goal: 'go', runId: 's' });
    expect(live.stopReason, live.detail).toBe('completed');
    expect(await store.readJournal('s', 0, ['transcript'])).toEqual([]);
    const record = await recordOf(store, 's');
    expect(record.resultMessages).toBeUndefined();
    expect(record.result.messages).toEqual(JSON.parse(JSON.stringify(live.messages)));
    expect((await loop().resume('s')).messages).toEqual(live.messages);
  });

  it('a missing or damaged chunk the record names is refused, naming its seq; nothing else is lost', async () => {
    const path = join(scratch, 'damaged.db');
    let store = sqliteStore({ path });
    const live = await plainLoop(store).run({ goal: 'go', runId: 'r' });
    expect(live.stopReason, live.detail).toBe('completed');
    const { resultMessages } = await recordOf(store, 'r');
    const head = resultMessages!.seq;
    const chain = JSON.parse((await store.readJournal('r', head - 1, ['transcript']))[0]!.body) as {
      seq: number;
      previous: number;
      change: { replace: boolean };
    };
    expect(chain.seq).toBe(head);
    // It continues the chunk before it (which the reader then needs).
    expect(chain.change.replace).toBe(false);
    await store.close();
    const db = new Database(path);
    const rowOf = (seq: number) =>
      db.prepare("SELECT body, packed FROM journal WHERE run_id = 'r' AND seq = ?").get(seq) as {
        body: string;
        packed: Buffer | null;
      };
    const put = (seq: number, row: { body: string; packed: Buffer | null }) =>
      db
        .prepare("UPDATE journal SET body = ?, packed = ? WHERE run_id = 'r' AND seq = ?")
        .run(row.body, row.packed, seq);
    const refusal = async () => {
      const opened = sqliteStore({ path });
      try {
        return await plainLoop(opened)
          .resume('r')
          .then(
            () => null,
            (error: unknown) => error,
          );
      } finally {
        await opened.close();
      }
    };
    const savedHead = rowOf(head);
    // The named chunk cut short (a torn write).
    put(head, { body: '{"schemaVersion":6,"kind":"transcript","runId":"r","seq', packed: null });
    let refused = await refusal();
    expect(refused).toBeInstanceOf(StoreRecordError);
    expect(refused).toMatchObject({ code: 'corrupt_record', runId: 'r', seq: head });
    // The chunk it continues, gone.
    put(head, savedHead);
    const savedPrevious = rowOf(chain.previous);
    db.prepare("DELETE FROM journal WHERE run_id = 'r' AND seq = ?").run(chain.previous);
    refused = await refusal();
    expect(refused).toMatchObject({ code: 'corrupt_record', runId: 'r', seq: head });
    expect((refused as Error).message).toContain(`seq ${chain.previous}`);
    // The named chunk itself gone: the run record is refused (it names a chunk the journal lacks).
    db.prepare("DELETE FROM journal WHERE run_id = 'r' AND seq = ?").run(head);
    refused = await refusal();
    expect(refused).toMatchObject({ code: 'corrupt_record', runId: 'r', seq: null });
    expect((refused as Error).message).toContain(`seq ${head}`);
    // The refusals wrote nothing: the run is still listed as it finished, and with its chunks put back it reads exactly.
    store = sqliteStore({ path });
    const { runs, unreadable } = await listStoredRuns(store);
    expect(unreadable).toEqual([]);
    expect(runs).toMatchObject([{ runId: 'r', status: 'succeeded', stopReason: 'completed' }]);
    await store.close();
    const insert = db.prepare('INSERT INTO journal (id, run_id, kind, body, packed) VALUES (?, ?, ?, ?, ?)');
    const number = (db.prepare("SELECT number FROM runs WHERE run_id = 'r'").get() as { number: number }).number;
    for (const [seq, row] of [
      [chain.previous, savedPrevious],
      [head, savedHead],
    ] as const)
      insert.run(BigInt(number) * 2n ** 32n + BigInt(seq), 'r', 'transcript', row.body, row.packed);
    db.close();
    store = sqliteStore({ path });
    const read = await plainLoop(store).resume('r');
    await store.close();
    expect(read.messages).toEqual(live.messages);
  });
});
