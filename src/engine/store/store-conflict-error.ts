import { LoopstateError } from '../../contracts/errors.js';

/**
 * A write a store refused because another writer got there first: the seq exists, or the lease moved on.
 * @example
 * try { await store.append(runId, rows, lease) } catch (error) { if (error instanceof StoreConflictError) console.error(error.runId, error.seq) }
 */
export class StoreConflictError extends LoopstateError {
  readonly runId: string;
  readonly seq: number | null;
  constructor({ runId, seq, message, cause }: { runId: string; seq: number | null; message: string; cause?: unknown }) {
    super({ code: 'store_conflict', message, cause });
    this.runId = runId;
    this.seq = seq;
  }
}
