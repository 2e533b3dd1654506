/**
 * sqliteStore's `readControl` answers from the control it last read while the database's `data_version` stands (no
 * other connection committed since) and the store wrote nothing meanwhile. A cancel or a pause from anywhere must
 * still be seen by the next read: through the same store, through another store on the same file (another
 * connection of this process), and from another process. A run reads it (or takes it from a commit) before every
 * step that has a commit before it; steps grouped into one commit take the control that commit found, so a cancel
 * is seen at the group's next commit.
 */
import { spawnSync } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { createRequire } from 'node:module';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { z } from 'zod';
import { afterAll, describe, expect, it } from 'vitest';
import { createLoop, defineTool, type Message, type Model, type Store } from 'loopstate';
import { sqliteStore } from 'loopstate/sqlite';

const scratch = mkdtempSync(join(tmpdir(), 'loopstate-sqlite-control-'));
afterAll(() => rmSync(scratch, { recursive: true, force: true }));
let files = 0;
const freshPath = () => join(scratch, `control-${files++}.db`);
const lease = { owner: 'owner-a', until: Date.now() + 60_000 };

/** Another process that commits `sql` (with `args`) to the file, as a CLI or another worker would. */
function inAnotherProcess(path: string, sql: string, ...args: unknown[]): void {
  const driver = createRequire(import.meta.url).resolve('better-sqlite3');
  const script = `const D = require(${JSON.stringify(driver)}); const db = new D(${JSON.stringify(path)}); db.pragma('busy_timeout = 5000'); db.prepare(${JSON.stringify(sql)}).run(...${JSON.stringify(args)}); db.close();`;
  const outcome = spawnSync(process.execPath, ['-e', script], { encoding: 'utf8' });
  if (outcome.status !== 0) throw new Error(`the other process failed: ${outcome.stderr}`);
}

async function storeWithRun(path: string): Promise<Store> {
  const store = sqliteStore({ path });
  expect(await store.createRun('r1', '{}', lease)).toBe(true);
  return store;
}

describe('sqliteStore readControl between commits', () => {
  it('sees a cancel and a pause made through the same store', async () => {
    const store = await storeWithRun(freshPath());
    try {
      expect(await store.readControl('r1')).toEqual({ paused: null, cancelRequested: false });
      expect(await store.readControl('r1')).toEqual({ paused: null, cancelRequested: false });
      await store.setPaused('maintenance');
      expect(await store.readControl('r1')).toEqual({ paused: 'maintenance', cancelRequested: false });
      await store.setPaused(null);
      expect(await store.readControl('r1')).toEqual({ paused: null, cancelRequested: false });
      expect(await store.requestCancel('r1')).toBe(true);
      expect(await store.readControl('r1')).toEqual({ paused: null, cancelRequested: true });
    } finally {
      await store.close();
    }
  });

  it('sees a cancel and a pause made through another store on the same file (another connection)', async () => {
    const path = freshPath();
    const store = await storeWithRun(path);
    const other = sqliteStore({ path });
    try {
      expect(await store.readControl('r1')).toEqual({ paused: null, cancelRequested: false });
      await other.setPaused('deploy');
      expect(await store.readControl('r1')).toEqual({ paused: 'deploy', cancelRequested: false });
      await other.setPaused(null);
      expect(await store.readControl('r1')).toEqual({ paused: null, cancelRequested: false });
      expect(await other.requestCancel('r1')).toBe(true);
      expect(await store.readControl('r1')).toEqual({ paused: null, cancelRequested: true });
    } finally {
      await other.close();
      await store.close();
    }
  });

  it('sees a cancel and a pause committed by another process', async () => {
    const path = freshPath();
    const store = await storeWithRun(path);
    try {
      expect(await store.readControl('r1')).toEqual({ paused: null, cancelRequested: false });
      inAnotherProcess(
        path,
        "INSERT INTO control (key, value) VALUES ('paused', ?) ON CONFLICT (key) DO UPDATE SET value = excluded.value",
        'ops',
      );
      expect(await store.readControl('r1')).toEqual({ paused: 'ops', cancelRequested: false });
      inAnotherProcess(path, 'UPDATE runs SET cancel_requested = 1 WHERE run_id = ?', 'r1');
      expect(await store.readControl('r1')).toEqual({ paused: 'ops', cancelRequested: true });
    } finally {
      await store.close();
    }
  });

  it('answers each run with its own control, and a reopened store reads the file again', async () => {
    const path = freshPath();
    const store = await storeWithRun(path);
    try {
      expect(await store.createRun('r2', '{}', lease)).toBe(true);
      expect(await store.readControl('r1')).toEqual({ paused: null, cancelRequested: false });
      inAnotherProcess(path, 'UPDATE runs SET cancel_requested = 1 WHERE run_id = ?', 'r2');
      expect(await store.readControl('r2')).toEqual({ paused: null, cancelRequested: true });
      expect(await store.readControl('r1')).toEqual({ paused: null, cancelRequested: false });
      await store.close();
      inAnotherProcess(path, 'UPDATE runs SET cancel_requested = 1 WHERE run_id = ?', 'r1');
      expect(await store.readControl('r1')).toEqual({ paused: null, cancelRequested: true });
    } finally {
      await store.close();
    }
  });

  it.each([
    // Nothing grouped (a commit before every model call): the commit before the sixth call finds the cancel.
    ['another store in this process', 'store', 1, 5],
    ['another process', 'process', 1, 5],
    // Groups of 16 (the default): the first commit is before call 1, the next before call 17, which finds it.
    ['another store in this process', 'store', 16, 16],
    ['another process', 'process', 16, 16],
  ] as const)(
    '%s cancels a run at its fifth call (%s): maxUncommittedSteps %i, it stops after call %i',
    async (_name, from, maxUncommittedSteps, stopsAfter) => {
      const path = freshPath();
      const store = sqliteStore({ path });
      const other = sqliteStore({ path });
      let calls = 0;
      const model: Model = {
        id: 'scripted',
        async generate(request) {
          calls += 1;
          const step = request.messages.filter((message: Message) => message.role === 'assistant').length + 1;
          // At the fifth call (steps of read-only calls: grouped into one commit unless the bound is 1).
          if (step === 5) {
            if (from === 'store') await other.requestCancel('grouped');
            else inAnotherProcess(path, 'UPDATE runs SET cancel_requested = 1 WHERE run_id = ?', 'grouped');
          }
          const usage = { inputTokens: 5, outputTokens: 5 };
          return {
            text: null,
            toolCalls: [{ id: `c${step}`, name: 'look', arguments: `{"n":${step}}` }],
            usage,
          };
        },
      };
      const look = defineTool({
        name: 'look',
        description: 'Looks.',
        input: z.object({ n: z.number() }),
        access: 'read',
        execute: ({ n }) => `seen ${n}`,
      });
      try {
        // The time bound far off: the other process takes long to start, and only the step bound may decide.
        const loop = createLoop({
          model,
          tools: [look],
          store,
          limits: { maxSteps: 50 },
          durable: { maxUncommittedSteps, maxUncommittedMs: 600_000 },
        });
        const result = await loop.run({
          goal: 'go',
          runId: 'grouped',
        });
        expect(result.stopReason).toBe('cancelled');
        expect(calls).toBe(stopsAfter);
      } finally {
        await other.close();
        await store.close();
      }
    },
  );
});
