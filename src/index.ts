/**
 * loopstate: bounded LLM agent loops as explicit XState v5 statecharts.
 * Public API only; test doubles live in `loopstate/testing`.
 */
export { createLoop, type Loop } from './loop.js';
export type { LoopConfig, TaskConfig, TaskPromptContext, RunInput, DurableOptions, TenantBudget, ToolOrder } from './config.js';
export type { RunResult, PendingApproval } from './runtime/run-result.js';
export { defineTool, checkToolPolicy, ToolHealth, ToolCallError, isCallerFault } from './tools/index.js';
export type { Tool, ToolDefinition, ToolAccess, ToolContext, ToolPolicy, PolicyVerdict, OutcomeLookup, ToolHealthStats, CircuitState, ToolFailureBlame } from './tools/index.js';
export { evaluators, runEvaluators } from './evaluators/index.js';
export type { Evaluator, EvaluationInput, EvaluationResult, EvaluationSummary, EvaluateOption, EvaluatorOutput, EvaluatorsOutput, LoopOutput } from './evaluators/index.js';
export type { Model, ModelRequest, ModelResponse, ModelUsage, ModelSettings, ModelProgress, ResponseFormat, Message, ToolSpec, ToolCallRequest } from './model/types.js';
export { openaiModel, type OpenAIModelOptions } from './model/openai/openai-model.js';
export { OPENAI_PRICES } from './model/openai/prices.js';
export {
  recordModel,
  replayModel,
  CassetteFileError,
  CassetteMismatchError,
  CASSETTE_SCHEMA_VERSION,
  type RecordModelOptions,
  type RecordingModel,
  type ReplayModelOptions,
  type ReplayingModel,
  type CassetteFileErrorCode,
} from './model/cassette/index.js';
export {
  LoopstateError,
  LoopConfigError,
  ModelCallError,
  ScriptExhaustedError,
  isModelCallError,
  isRetryableModelErrorKind,
  retryableModelError,
  type ConfigErrorScope,
  type ConfigIssue,
  type ModelCallErrorLike,
  type ModelErrorKind,
} from './errors.js';
export { DEFAULT_LIMITS, DEFAULT_NO_PROGRESS, DEFAULT_PRICES, OPENAI_DEFAULTS, type ModelPrice } from './constants.js';
export { DEFAULT_CONTEXT } from './constants.js';
export type { ContextOptions, ContextStrategy } from './context/context-window.js';
export { systemClock, type Clock } from './runtime/clock.js';
export type { TraceEvent, TraceEventType, TraceOptions, OtelTraceOptions } from './trace/trace-event.js';
export { traceEventSchema, TRACE_SCHEMA_VERSION, type TracedMessage, type TracedLimits, type TracedArgumentError } from './trace/trace-schema.js';
export { parseTraceLine, parseTraceText, readTraceFile, TraceFileError, type TraceFile } from './trace/trace-file.js';
export { rebuildPrompts, type RebuiltPrompt } from './trace/prompt-snapshots.js';
export { rebuildRun, type RebuiltRun } from './trace/rebuild-run.js';
export { GEN_AI_SEMCONV_VERSION } from './trace/otel/genai-conventions.js';
export { sqliteStore, type SqliteStoreOptions } from './store/sqlite/sqlite-store.js';
export { memoryStore } from './store/memory-store.js';
export { postgresStore, type PostgresStore, type PostgresStoreOptions } from './store/postgres/postgres-store.js';
export { dbosWorker, type DbosWorker, type DbosWorkerOptions } from './dbos/dbos-worker.js';
export { dbosClient, type DbosClientOptions, type LoopDbosClient } from './dbos/dbos-client.js';
export { machineVersion } from './dbos/machine-version.js';
export type { Store, StoreRow, RunRow, Lease, RunControl } from './store/store.js';
export { StoreConflictError } from './store/store-conflict-error.js';
export { StoreRecordError, ApprovalError, RunAccessError, type ApprovalErrorCode, type RunAccessErrorCode } from './durable/durable-errors.js';
export { argumentsHash, type ApprovalInput, type ResumeOptions } from './durable/durable-runs.js';
export { UnknownOutcomeError } from './tools/unknown-outcome-error.js';
export { readTenantLedger } from './durable/tenant-ledger.js';
export type { LedgerRecord as TenantLedger } from './durable/records.js';
export { DEFAULT_DURABLE, DEFAULT_DBOS_WORKER } from './constants.js';
export type { RedactOptions } from './redaction/redact.js';
export { statelyInspector, type StatelyInspector, type StatelyInspectorOptions, type StatelyInspectorStatus } from './inspect/stately-inspector.js';
export type { InspectOption } from './inspect/inspect-option.js';
export { loopMachine, getPendingEffect, STOP_REASONS } from '../machines/index.js';
export type { StopReason, RunStatus, Usage, LoopLimits, NoProgressThresholds, NoProgressSignal, LoopEvent, PendingEffect } from '../machines/index.js';
