/** Tenant budgets: runs of one tenant draw from one ledger and never overspend it by more than the calls in flight. */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { z } from 'zod';
import {
  createLoop,
  defineTool,
  LoopConfigError,
  memoryStore,
  readTenantLedger,
  type Model,
  type RunResult,
  type Store,
} from 'loopstate';
import { sqliteStore } from 'loopstate/sqlite';
import { virtualClock } from 'loopstate/testing';

const scratch = mkdtempSync(join(tmpdir(), 'loopstate-tenant-'));
afterAll(() => rmSync(scratch, { recursive: true, force: true }));

/** $0.001 per call (1,000 input tokens at $1 per million), a new lookup every call: only a budget stops it. */
const CALL_COST = 0.001;
function endlessModel(): Model {
  let call = 0;
  return {
    id: 'priced',
    generate: async () => {
      call++;
      await new Promise((resolve) => setImmediate(resolve));
      return {
        text: null,
        toolCalls: [{ id: `c${call}`, name: 'lookup', arguments: JSON.stringify({ n: call }) }],
        usage: { inputTokens: 1_000, outputTokens: 0 },
      };
    },
  };
}

function tenantLoop(store: Store, runLimit: number, tenantBudget: number) {
  const lookup = defineTool({
    name: 'lookup',
    description: 'Look up',
    input: z.object({ n: z.number() }),
    access: 'read',
    execute: async ({ n }) => ({ n }),
  });
  return createLoop({
    model: endlessModel(),
    tools: [lookup],
    store,
    clock: virtualClock(),
    prices: { priced: { inputPerMillion: 1, outputPerMillion: 1 } },
    limits: { maxCostUsd: runLimit, maxSteps: 50 },
    noProgress: { unchangedState: 100 },
    tenant: { id: 'acme', maxCostUsd: tenantBudget },
  });
}

const spent = (results: RunResult[]) => results.reduce((sum, result) => sum + result.usage.costUsd, 0);

describe('tenant budgets', () => {
  it('concurrent runs share the budget: holds never add up past it, and the ledger charges what was spent', async () => {
    const store = memoryStore();
    const loop = tenantLoop(store, 0.004, 0.01);
    const results = await Promise.all(
      Array.from({ length: 5 }, (_, index) => loop.run({ goal: 'look', runId: `t${index}` })),
    );
    expect(results.every((result) => result.stopReason === 'budget_exhausted')).toBe(true);
    // Each run may let one call overrun its share (its gate checks before the next spend): the calls in flight.
    expect(spent(results)).toBeLessThanOrEqual(0.01 + results.length * CALL_COST + 1e-9);
    const ledger = await readTenantLedger(store, 'acme');
    expect(ledger?.holds).toEqual({});
    expect(ledger?.spent.costUsd).toBeCloseTo(spent(results), 9);
    const starved = results.filter((result) => result.usage.modelCalls === 0);
    expect(starved.length).toBeGreaterThan(0);
    expect(starved[0]?.detail).toMatch(
      /tenant acme's budget was what the tenant had left when it started \(maxCostUsd \$0 left\); raise tenant\.maxCostUsd/,
    );
  });

  it('the same across two SQLite connections to one file', async () => {
    const path = join(scratch, 'tenant.db');
    const stores = [sqliteStore({ path }), sqliteStore({ path })];
    const loops = stores.map((store) => tenantLoop(store, 0.003, 0.01));
    const results = await Promise.all(
      Array.from({ length: 6 }, (_, index) => loops[index % 2]!.run({ goal: 'look', runId: `s${index}` })),
    );
    expect(spent(results)).toBeLessThanOrEqual(0.01 + results.length * CALL_COST + 1e-9);
    const ledger = await readTenantLedger(stores[0]!, 'acme');
    expect(ledger?.holds).toEqual({});
    expect(ledger?.spent.costUsd).toBeCloseTo(spent(results), 9);
    for (const store of stores) await store.close();
  });

  it('a later run gets what is left; a run stopped for approval keeps its share until it finishes', async () => {
    const store = memoryStore();
    const first = await tenantLoop(store, 0.004, 0.006).run({ goal: 'look', runId: 'a' });
    expect(first.usage.costUsd).toBeCloseTo(0.004, 9);
    const second = await tenantLoop(store, 0.004, 0.006).run({ goal: 'look', runId: 'b' });
    expect(second.usage.costUsd).toBeCloseTo(0.002, 9);
    expect(second.detail).toMatch(/maxCostUsd \$0\.002 left/);

    const wipe = defineTool({
      name: 'wipe',
      description: 'Wipe',
      input: z.object({}),
      access: 'destructive',
      execute: () => 'wiped',
    });
    const betaStore = memoryStore();
    let calls = 0;
    const model: Model = {
      id: 'priced',
      generate: async () =>
        calls++ === 0
          ? {
              text: null,
              toolCalls: [{ id: 'w', name: 'wipe', arguments: '{}' }],
              usage: { inputTokens: 1_000, outputTokens: 0 },
            }
          : { text: 'wiped', toolCalls: [], usage: { inputTokens: 1_000, outputTokens: 0 } },
    };
    const waiting = createLoop({
      model,
      tools: [wipe],
      store: betaStore,
      clock: virtualClock(),
      prices: { priced: { inputPerMillion: 1, outputPerMillion: 1 } },
      tenant: { id: 'beta', maxCostUsd: 1 },
      limits: { maxCostUsd: 0.5 },
    });
    const stopped = await waiting.run({ goal: 'wipe', runId: 'w1' });
    expect(stopped.status).toBe('needs_human');
    expect((await readTenantLedger(betaStore, 'beta'))?.holds).toEqual({
      w1: { costUsd: 0.5, inputTokens: null, outputTokens: null },
    });
    const done = await waiting.resume('w1', { approvals: { w: { approve: true } } });
    expect(done.stopReason).toBe('completed');
    const ledger = await readTenantLedger(betaStore, 'beta');
    expect(ledger?.holds).toEqual({});
    expect(ledger?.spent.costUsd).toBeCloseTo(0.002, 9);
  });

  it('needs a store', () => {
    expect(() => createLoop({ model: endlessModel(), tenant: { id: 'acme', maxCostUsd: 1 } })).toThrow(LoopConfigError);
  });
});
