/**
 * `loopstate/cassette`: record a run against a real model as a cassette file and replay it offline (Node: it
 * reads and writes files).
 */
export { recordModel, type RecordModelOptions, type RecordingModel } from './record-model.js';
export { replayModel, type ReplayModelOptions, type ReplayingModel } from './replay-model.js';
export { CassetteFileError, CassetteMismatchError, type CassetteFileErrorCode } from './cassette-errors.js';
export { CASSETTE_SCHEMA_VERSION } from './cassette-format.js';
