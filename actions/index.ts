/** The reducer record for `setup()`; all pure, all O(1). */
export * from './record.js';
export * from './control.js';
export { createInitialContext, FRESH_PROGRESS, FRESH_TASK_COUNTERS } from './initial-context.js';
