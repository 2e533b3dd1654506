/**
 * A real SQLite store whose appends, control reads and snapshot writes are counted, and a loop of scripted
 * rounds (reads, writes) on it: what commit-grouping.test.ts and commit-groups.test.ts count.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { z } from 'zod';
import {
  appendTakesSnapshot,
  createLoop,
  defineTool,
  type Evaluator,
  type Model,
  type Store,
  type StoreRow,
} from 'loopstate';
import { sqliteStore } from 'loopstate/sqlite';
import { virtualClock } from 'loopstate/testing';

const scratch = mkdtempSync(join(tmpdir(), 'loopstate-commit-grouping-'));
/** Removes every file the counted stores made (after they are closed). */
export const removeScratch = () => rmSync(scratch, { recursive: true, force: true });
let files = 0;

export interface Counted {
  store: Store;
  /** The SQLite file (for a second handle, as another process would open). */
  path: string;
  /** Per append: the kinds of its rows. */
  appends: string[][];
  readControls: number;
  /** Appends made before each model call, and before each charge (the write tool) ran. */
  appendsAtModelCall: number[];
  appendsAtCharge: number[];
  /**
   * Per snapshot written: its seq, the seqs of the rows committed with or before it, and whether it went in an
   * append's transaction (`inAppend`) or through `writeSnapshot`.
   */
  snapshots: { seq: number; committed: number[]; inAppend: boolean }[];
  /** `writeSnapshot` calls. */
  writeSnapshots: number;
}

/** A real SQLite store, counted; `silent`: its appends answer nothing (the journal must then ask readControl). */
export function counted(silent = false, pausePollMs?: number): Counted {
  const path = join(scratch, `run-${files++}.db`);
  const inner = sqliteStore({ path, ...(pausePollMs === undefined ? {} : { pausePollMs }) });
  const counts: Counted = {
    store: inner,
    path,
    appends: [],
    readControls: 0,
    appendsAtModelCall: [],
    appendsAtCharge: [],
    snapshots: [],
    writeSnapshots: 0,
  };
  const committed: number[] = [];
  // Counted as it is written apart; the counted append takes snapshots as the inner store's does (its mark names
  // this wrapper's writeSnapshot: a wrapper that replaces writeSnapshot is otherwise given every snapshot there).
  const writeSnapshot: Store['writeSnapshot'] = async (runId, row, lease) => {
    counts.writeSnapshots += 1;
    counts.snapshots.push({ seq: row.seq, committed: [...committed], inAppend: false });
    return inner.writeSnapshot(runId, row, lease);
  };
  counts.store = {
    ...inner,
    [appendTakesSnapshot]: writeSnapshot,
    pausePollMs: inner.pausePollMs,
    async append(...args) {
      counts.appends.push(args[1].map((row: StoreRow) => row.kind));
      const control = await inner.append(...args);
      committed.push(...args[1].map((row: StoreRow) => row.seq));
      const snapshot = args[5];
      if (snapshot !== undefined && control?.snapshotWritten === true)
        counts.snapshots.push({ seq: snapshot.seq, committed: [...committed], inAppend: true });
      return silent ? undefined : control;
    },
    writeSnapshot,
    async readControl(runId) {
      counts.readControls += 1;
      return inner.readControl(runId);
    },
  };
  return counts;
}

export type Round = ('lookup' | 'charge')[];

export function groupedLoop(
  counts: Counted,
  rounds: Round[],
  onModelCall: (step: number) => Promise<void> = async () => {},
  snapshotEvery = 1_000,
  grouping: { maxUncommittedSteps?: number; maxUncommittedMs?: number } = {},
  evaluate: Evaluator[] = [],
) {
  const model: Model = {
    id: 'script',
    async generate({ messages }) {
      const step = messages.filter((message) => message.role === 'assistant').length;
      counts.appendsAtModelCall.push(counts.appends.length);
      await onModelCall(step);
      const usage = { inputTokens: 10, outputTokens: 2 };
      const round = rounds[step];
      if (round === undefined) return { text: 'done', toolCalls: [], usage };
      return {
        text: null,
        toolCalls: round.map((name, index) => ({
          id: `c${step}_${index}`,
          name,
          arguments: JSON.stringify({ id: `s${step}_${index}` }),
        })),
        usage,
      };
    },
  };
  const lookup = defineTool({
    name: 'lookup',
    description: 'Read',
    input: z.object({ id: z.string() }),
    access: 'read',
    execute: async ({ id }) => `found ${id}`,
  });
  const charge = defineTool({
    name: 'charge',
    description: 'Charge (not idempotent)',
    input: z.object({ id: z.string() }),
    access: 'write',
    execute: async ({ id }) => {
      counts.appendsAtCharge.push(counts.appends.length);
      return `charged ${id}`;
    },
  });
  return createLoop({
    model,
    tools: [lookup, charge],
    store: counts.store,
    clock: virtualClock(),
    policy: { allow: ['read', 'write'] },
    // No snapshot inside the steps counted, unless asked for.
    durable: { snapshotEvery, ...grouping },
    noProgress: { unchangedState: 1_000 },
    limits: { maxSteps: 100 },
    evaluate,
  });
}

/** Commits between one model call and the next, for each step after the first. */
export const commitsPerStep = (counts: Counted) =>
  counts.appendsAtModelCall.slice(1).map((at, index) => at - counts.appendsAtModelCall[index]!);

export async function kindsIn(store: Store, runId: string): Promise<string[]> {
  return (await store.readJournal(runId, 0)).map((row) => row.kind);
}
