/**
 * Driver-side progress facts for the no-progress signals.
 */
export { canonicalJson } from './canonical-json.js';
export { toolCallFingerprint } from './tool-call-fingerprint.js';
export { ProgressTracker } from './progress-tracker.js';
export type {
  ProgressChainState,
  ProgressTrackerScalars,
  ProgressTrackerSnapshot,
  ProgressTripleChanges,
  StateDigestParts,
} from './progress-tracker.js';
