/**
 * The store contract as checks any test runner can run: each makes a fresh store, exercises one
 * property the durable layer relies on, and throws a `StoreContractError` naming what broke.
 */
import { LoopConfigError, type ConfigIssue } from '../../contracts/errors.js';
import type { Store } from '../../contracts/store.js';
import { dataChecks } from './data-checks.js';
import { describe, fail, type CheckContext } from './expectations.js';
import { StoreContractError } from './store-contract-error.js';
import { journalChecks, type ContractCheckBody } from './journal-checks.js';
import { leaseChecks } from './lease-checks.js';
import { learningChecks } from './learning-checks.js';
import { listChecks } from './list-checks.js';
import { pruneChecks } from './prune-checks.js';
import { recordChecks } from './record-checks.js';

/**
 * Options of `storeContract`.
 * @example
 * const options: StoreContractOptions = { cleanup: (store) => dropSchemaOf(store), concurrency: 8 };
 */
export interface StoreContractOptions {
  /** Called after each check, once its store is closed (pass or fail): delete its file, drop its schema. */
  cleanup?: (store: Store) => void | Promise<void>;
  /** Characters of each body in the large-record check (default 1 MiB: 1,048,576). */
  largeRecordChars?: number;
  /** Concurrent writers in the tenant-ledger check, at least 2 (default 16). */
  concurrency?: number;
}

/**
 * One check of the store contract: `run()` resolves when the store keeps the property `name` states,
 * and rejects with a `StoreContractError` when it does not.
 * @example
 * for (const check of storeContract(() => memoryStore())) await check.run();
 */
export interface StoreContractCheck {
  readonly name: string;
  run(): Promise<void>;
}

const CHECKS: readonly ContractCheckBody[] = [
  ...journalChecks,
  ...leaseChecks,
  ...recordChecks,
  ...dataChecks,
  ...pruneChecks,
  ...learningChecks,
  ...listChecks,
];
const DEFAULT_LARGE_RECORD_CHARS = 1024 * 1024;
const DEFAULT_CONCURRENCY = 16;

function checkOptions(makeStore: unknown, options: StoreContractOptions | undefined): void {
  const issues: ConfigIssue[] = [];
  if (typeof makeStore !== 'function')
    issues.push({
      path: 'makeStore',
      message: 'expected a function that returns a new, empty store (or a promise of one)',
    });
  if (options !== undefined && (typeof options !== 'object' || options === null))
    issues.push({ path: 'options', message: 'expected an object' });
  else {
    if (options?.cleanup !== undefined && typeof options.cleanup !== 'function')
      issues.push({ path: 'cleanup', message: 'expected a function of the store' });
    const size = options?.largeRecordChars;
    if (size !== undefined && !(Number.isInteger(size) && size >= 64))
      issues.push({ path: 'largeRecordChars', message: 'expected an integer of at least 64' });
    const concurrency = options?.concurrency;
    if (concurrency !== undefined && !(Number.isInteger(concurrency) && concurrency >= 2))
      issues.push({ path: 'concurrency', message: 'expected an integer of at least 2' });
  }
  if (issues.length > 0) throw new LoopConfigError({ issues });
}

/** Something to call a store method on: a contract check cannot run on less. */
function isStoreLike(value: unknown): value is Store {
  return (
    typeof value === 'object' &&
    value !== null &&
    ['createRun', 'readRun', 'acquireLease', 'append', 'close'].every(
      (method) => typeof (value as Record<string, unknown>)[method] === 'function',
    )
  );
}

/**
 * The store contract as a list of checks, for any test runner: each check calls `makeStore()` for a new,
 * empty store of its own (a fresh file, database or schema), exercises one property the durable runs rely
 * on (journal order, refused duplicate seqs, lease compare-and-set and expiry, snapshots, one decision per
 * approval, ids such as `__proto__`, cancel and pause, ledger and learning-record compare-and-set under concurrent writers,
 * 1 MiB and non-ASCII records), closes the store and calls `cleanup`. A check rejects with a
 * `StoreContractError` (code `store_contract_violated`) naming the check, the step, and what was
 * expected against what the store gave. Throws `LoopConfigError` naming the field for bad arguments.
 * @example
 * import { describe, it } from 'vitest';
 * import { storeContract } from 'loopstate/testing';
 *
 * describe('myStore keeps the store contract', () => {
 *   for (const check of storeContract(() => myStore({ database: freshDatabase() }))) it(check.name, check.run);
 * });
 */
export function storeContract(
  makeStore: () => Store | Promise<Store>,
  options?: StoreContractOptions,
): StoreContractCheck[] {
  checkOptions(makeStore, options);
  const largeRecordChars = options?.largeRecordChars ?? DEFAULT_LARGE_RECORD_CHARS;
  const concurrency = options?.concurrency ?? DEFAULT_CONCURRENCY;
  return CHECKS.map(({ name, body }) => ({
    name,
    run: async () => {
      const setup: CheckContext = {
        check: name,
        store: undefined as unknown as Store,
        now: Date.now(),
        largeRecordChars,
        concurrency,
      };
      let store: unknown;
      try {
        store = await makeStore();
      } catch (error) {
        fail(setup, 'makeStore()', 'a new store', `it threw ${describe(error)}`, error);
      }
      if (!isStoreLike(store)) fail(setup, 'makeStore()', 'an object with the Store methods', describe(store));
      const context: CheckContext = { ...setup, store };
      let failure: StoreContractError | null = null;
      try {
        await body(context);
      } catch (error) {
        // A store that answers with the wrong shape can make the check itself throw: still the store's fault.
        failure =
          error instanceof StoreContractError
            ? error
            : new StoreContractError({
                check: name,
                what: 'running the check',
                expected: 'answers of the shapes the Store interface declares',
                actual: `an error while reading them: ${describe(error)}`,
                cause: error,
              });
      }
      try {
        await store.close();
      } catch (error) {
        failure ??= new StoreContractError({
          check: name,
          what: 'store.close() after the check',
          expected: 'the store to close',
          actual: `it threw ${describe(error)}`,
          cause: error,
        });
      }
      try {
        await options?.cleanup?.(store);
      } catch (error) {
        // The caller's own cleanup: its error is theirs, reported only when the store passed.
        if (failure === null) throw error;
      }
      if (failure !== null) throw failure;
    },
  }));
}
