/**
 * Record and replay: a run against a real model saved as a cassette, replayed offline.
 */
export { recordModel, type RecordModelOptions, type RecordingModel } from './record-model.js';
export { replayModel, type ReplayModelOptions, type ReplayingModel } from './replay-model.js';
export { CassetteFileError, CassetteMismatchError, type CassetteFileErrorCode } from './cassette-errors.js';
export { CASSETTE_SCHEMA_VERSION } from './cassette-format.js';
