import { LoopstateError } from '../../contracts/errors.js';

/**
 * A store broke its contract: `check` names the check of `storeContract` that failed, the message says
 * what was done, what the contract expects and what the store gave instead.
 * @example
 * try { await check.run() } catch (error) { if (error instanceof StoreContractError) console.error(error.check, error.expected, error.actual) }
 */
export class StoreContractError extends LoopstateError {
  /** The name of the failed check, as in `StoreContractCheck.name`. */
  readonly check: string;
  /** What the contract expects, in words or as JSON. */
  readonly expected: string;
  /** What the store gave (a value, or the error it threw), in words or as JSON. */
  readonly actual: string;
  constructor({
    check,
    what,
    expected,
    actual,
    cause,
  }: {
    check: string;
    what: string;
    expected: string;
    actual: string;
    cause?: unknown;
  }) {
    super({
      code: 'store_contract_violated',
      message: `store contract check "${check}" failed: ${what}: expected ${expected}, got ${actual}`,
      cause,
    });
    this.check = check;
    this.expected = expected;
    this.actual = actual;
  }
}
