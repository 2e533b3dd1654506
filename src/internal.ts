/**
 * `loopstate/internal`: what the CLI, `verify` and the viewer need beyond the public entries. No
 * stability promise: these names may change in any release.
 */
export { type ResolvedConfig, defaultRunId, resolveConfig, resolveLimits } from './engine/config/config.js';
export { loopConfigOf } from './engine/loop.js';
export { priceOf } from './engine/pricing/pricing.js';
export { thrownMessage } from './engine/redaction/describe-thrown.js';
export { addCall } from './engine/trace/rebuild-run.js';
