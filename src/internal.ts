/**
 * `loopstate/internal`: what the CLI, `verify` and the viewer need beyond the public entries. No
 * stability promise: these names may change in any release.
 */
export { type ResolvedConfig, resolveConfig, resolveLimits } from './engine/config/config.js';
export { defaultRunId } from './engine/hooks/run-id.js';
export { loopConfigOf } from './engine/loop.js';
export { priceOf } from './engine/pricing/pricing.js';
export { thrownMessage } from './engine/redaction/describe-thrown.js';
export { addCall } from './engine/trace/rebuild-run.js';
export {
  decodeLearningRecord,
  emptyLearningRecord,
  encodeLearningRecord,
  learningKey,
  type LearningRecord,
  type LearnedTool,
  type LearnedTask,
} from './engine/learning/learning-record.js';
export { decayedRecord, taskFeedbackOf } from './engine/learning/learning-math.js';
// --- the console and `loopstate runs`
export { durableRunsOf } from './engine/loop.js';
export {
  listStoredRuns,
  storedRunOf,
  STORED_RUN_STATUSES,
  type ListStoredRunsOptions,
  type StoredPendingReview,
  type StoredRun,
  type StoredRunPage,
  type UnreadableRun,
} from './engine/durable/stored-runs.js';
// --- end of the console
