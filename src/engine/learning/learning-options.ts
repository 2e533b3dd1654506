/** The `learning` option of `createLoop`: its shape, its checks and its defaults. */
import { DEFAULT_LEARNING } from '../constants.js';
import type { LearningRules } from './learning-math.js';

/**
 * Learning across runs: tool health and task feedback kept in the store, per loop `name` and tenant,
 * shared by every process on that store. Off unless given; needs a `store`.
 * @example
 * createLoop({ model, tools, name: 'support-bot', store: sqliteStore({ path: 'loops.db' }), toolOrder: 'success_rate',
 *   learning: { learningRate: 0.2, batchWindow: { outcomes: 20, ms: 30_000 }, halfLifeMs: 86_400_000 } });
 */
export interface LearningOptions {
  /** How far one batch moves a weight towards the batch's success rate, in (0, 1] (default 0.2). */
  learningRate?: number;
  /**
   * A batch is written every `outcomes` outcomes (tool calls and evaluations; default 20) or once `ms`
   * have passed since the last write (default 30 000), and at the end of every run.
   */
  batchWindow?: { outcomes?: number; ms?: number };
  /** Old outcomes weigh half after this long (default one day); `Infinity` never forgets. */
  halfLifeMs?: number;
  /** Failure reasons a task's feedback lists, the most frequent first (default 3). */
  topReasons?: number;
}

/** The learning options with every default filled in. */
export interface ResolvedLearning extends LearningRules {
  batchOutcomes: number;
  batchMs: number;
}

/** The options over `DEFAULT_LEARNING`; `undefined` keeps a default. */
export function resolveLearning(options: LearningOptions): ResolvedLearning {
  return {
    learningRate: options.learningRate ?? DEFAULT_LEARNING.learningRate,
    batchOutcomes: options.batchWindow?.outcomes ?? DEFAULT_LEARNING.batchWindow.outcomes,
    batchMs: options.batchWindow?.ms ?? DEFAULT_LEARNING.batchWindow.ms,
    halfLifeMs: options.halfLifeMs ?? DEFAULT_LEARNING.halfLifeMs,
    topReasons: options.topReasons ?? DEFAULT_LEARNING.topReasons,
  };
}
