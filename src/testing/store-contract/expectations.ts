/**
 * The assertions of the store contract checks: each throws a `StoreContractError` naming the check, the
 * step and what was expected against what the store gave. No test framework, so any runner can run them.
 */
import type { Store } from '../../contracts/store.js';
import { StoreContractError } from './store-contract-error.js';

/** What one check gets: its name (for errors), a fresh store and a wall-clock base for its leases. */
export interface CheckContext {
  readonly check: string;
  readonly store: Store;
  /** Epoch ms at the check's start: leases are set relative to it, expiry is tested through `now`. */
  readonly now: number;
  /** Characters of each body in the large-record check. */
  readonly largeRecordChars: number;
  /** Concurrent writers in the ledger check. */
  readonly concurrency: number;
}

const MAX_SHOWN = 160;

/** A value as a short readable text: JSON (keys sorted), errors by name, code and message. */
export function describe(value: unknown): string {
  if (value === undefined) return 'undefined';
  if (value instanceof Error) {
    const { code } = value as { code?: unknown };
    return `${value.name}${typeof code === 'string' ? ` (${code})` : ''}: ${value.message}`;
  }
  const text = canonical(value);
  return text.length > MAX_SHOWN ? `${text.slice(0, MAX_SHOWN)}… (${text.length} characters)` : text;
}

/** JSON with object keys sorted, so rows compare equal whatever order a driver returns their columns in. */
function canonical(value: unknown): string {
  return (
    JSON.stringify(value, (_key, inner: unknown) =>
      inner !== null && typeof inner === 'object' && !Array.isArray(inner)
        ? Object.fromEntries(
            Object.keys(inner)
              .sort()
              .map((key) => [key, (inner as Record<string, unknown>)[key]]),
          )
        : inner,
    ) ?? String(value)
  );
}

/** Fails the check: `what` was done, `expected` was due, `actual` came. */
export function fail(context: CheckContext, what: string, expected: string, actual: string, cause?: unknown): never {
  throw new StoreContractError({ check: context.check, what, expected, actual, cause });
}

/** The same JSON value (object keys in any order; a number is not its string). */
export function expectEqual(context: CheckContext, what: string, actual: unknown, expected: unknown): void {
  if (canonical(actual) !== canonical(expected)) fail(context, what, describe(expected), describe(actual));
}

/** The same text, character for character; a difference in a long text is told by length and first differing index. */
export function expectText(context: CheckContext, what: string, actual: unknown, expected: string): void {
  if (actual === expected) return;
  if (typeof actual !== 'string') fail(context, what, `a string of ${expected.length} characters`, describe(actual));
  let index = 0;
  while (index < Math.min(actual.length, expected.length) && actual[index] === expected[index]) index++;
  const around = (text: string) => JSON.stringify(text.slice(index, index + 24));
  fail(
    context,
    what,
    `the ${expected.length} characters written`,
    `${actual.length} characters differing from index ${index} (${around(actual)} where ${around(expected)} was written)`,
  );
}

/** The write is refused with a `StoreConflictError` (code `store_conflict`) for `runId`. */
export async function expectConflict(
  context: CheckContext,
  what: string,
  write: () => Promise<unknown>,
  runId: string,
): Promise<void> {
  let outcome: unknown;
  try {
    outcome = await write();
  } catch (error) {
    const { code, runId: errorRunId } = (error ?? {}) as { code?: unknown; runId?: unknown };
    if (code === 'store_conflict' && errorRunId === runId) return;
    fail(
      context,
      what,
      `a StoreConflictError (code store_conflict) for run ${JSON.stringify(runId)}`,
      `${describe(error)}${code === 'store_conflict' ? ` for run ${describe(errorRunId)}` : ''}`,
      error,
    );
  }
  fail(
    context,
    what,
    `a StoreConflictError (code store_conflict) for run ${JSON.stringify(runId)}`,
    `success (${describe(outcome)})`,
  );
}

/** Runs one store call; a call that throws where the contract expects an answer fails the check with the error as cause. */
export async function call<T>(context: CheckContext, what: string, operation: () => Promise<T>): Promise<T> {
  try {
    return await operation();
  } catch (error) {
    return fail(context, what, 'the call to succeed', `it threw ${describe(error)}`, error);
  }
}
