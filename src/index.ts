/**
 * loopstate: bounded LLM agent loops as explicit XState v5 statecharts. The core: loops, tools,
 * evaluators, the in-memory store, traces and errors. Each adapter has its own entry, its package an
 * optional peer: `loopstate/openai`, `/cassette`, `/sqlite`, `/postgres`, `/dbos`, `/inspect`; test
 * doubles live in `loopstate/testing`.
 */
export { createLoop, type Loop } from './engine/loop.js';
export type {
  LoopConfig,
  TaskConfig,
  TaskPromptContext,
  RunInput,
  DurableOptions,
  TenantBudget,
  ToolOrder,
} from './engine/config/config.js';
export type { RunResult, PendingApproval, PendingReview } from './engine/runtime/run-result.js';
export { defineTool, checkToolPolicy, ToolHealth, ToolCallError, isCallerFault } from './engine/tools/index.js';
export type { LearningOptions } from './engine/learning/learning-options.js';
export type { TaskFeedback } from './engine/learning/learning-math.js';
export { LearningRecordError } from './engine/learning/learning-record.js';
export type {
  Tool,
  ToolDefinition,
  ToolAccess,
  ToolContext,
  ToolPolicy,
  PolicyVerdict,
  OutcomeLookup,
  ToolHealthStats,
  LearnedToolHealth,
  CircuitState,
  ToolFailureBlame,
} from './engine/tools/index.js';
export { evaluators, runEvaluators, JudgeVerdictError } from './engine/evaluators/index.js';
export type {
  Evaluator,
  EvaluationInput,
  EvaluationResult,
  EvaluationSummary,
  EvaluateOption,
  EvaluatorOutput,
  EvaluatorsOutput,
  LoopOutput,
  JudgeAggregate,
  ReviewEvaluatorOptions,
  ReviewContext,
} from './engine/evaluators/index.js';
export type {
  Model,
  ModelRequest,
  ModelResponse,
  ModelResponseMetadata,
  ModelFinishReason,
  ModelServer,
  ModelUsage,
  ModelSettings,
  ModelProgress,
  ResponseFormat,
  Message,
  ToolSpec,
  ToolCallRequest,
} from './contracts/model.js';
export {
  LoopstateError,
  LoopConfigError,
  ModelCallError,
  isModelCallError,
  isRetryableModelErrorKind,
  retryableModelError,
  type ConfigErrorScope,
  type ConfigIssue,
  type ModelCallErrorLike,
  type ModelErrorKind,
  MissingDependencyError,
} from './contracts/errors.js';
export { LOOPSTATE_ERROR_CODES, isLoopstateErrorCode, type LoopstateErrorCode } from './contracts/error-codes.js';
export {
  DEFAULT_LIMITS,
  DEFAULT_NO_PROGRESS,
  DEFAULT_PRICES,
  DEFAULT_CONTEXT,
  DEFAULT_DURABLE,
  DEFAULT_LEARNING,
} from './engine/constants.js';
export type { ModelPrice } from './contracts/model.js';
export type { ContextOptions, ContextStrategy } from './contracts/context-options.js';
export { systemClock, type Clock } from './engine/runtime/clock.js';
export type { TraceEvent, TraceEventType, TraceOptions, OtelTraceOptions } from './engine/trace/trace-event.js';
export {
  traceEventSchema,
  TRACE_SCHEMA_VERSION,
  type TracedMessage,
  type TracedLimits,
  type TracedArgumentError,
} from './contracts/trace-schema.js';
export { parseTraceLine, parseTraceText, TraceFileError, type TraceFile } from './engine/trace/trace-file.js';
export type { LenientTraceFile, TraceParseOptions } from './engine/trace/trace-file.js';
export { rebuildPrompts, type RebuiltPrompt } from './engine/trace/prompt-snapshots.js';
export { rebuildRun, type RebuiltRun } from './engine/trace/rebuild-run.js';
export { GEN_AI_SEMCONV_VERSION } from './engine/trace/otel/genai-conventions.js';
export { memoryStore } from './engine/store/memory-store.js';
export type {
  Store,
  StoreRow,
  RunRow,
  Lease,
  RunControl,
  AppendOutcome,
  PruneOptions,
  LearningRow,
  ListRunsOptions,
  ListedRun,
} from './contracts/store.js';
export { StoreConflictError } from './engine/store/store-conflict-error.js';
export { appendTakesSnapshot } from './contracts/store.js';
export {
  StoreRecordError,
  ApprovalError,
  ReviewError,
  RunAccessError,
  type ApprovalErrorCode,
  type ReviewErrorCode,
  type RunAccessErrorCode,
} from './engine/durable/durable-errors.js';
export {
  argumentsHash,
  type ApprovalInput,
  type ResumeOptions,
  type ReviewInput,
} from './engine/durable/durable-runs.js';
export { UnknownOutcomeError } from './engine/tools/unknown-outcome-error.js';
export { readTenantLedger } from './engine/durable/tenant-ledger.js';
export type { LedgerRecord as TenantLedger } from './engine/durable/run-record.js';
export type { RedactOptions } from './engine/redaction/redact.js';
export type { InspectOption } from './engine/runtime/inspect-option.js';
export { loopMachine, getPendingEffect, STOP_REASONS } from '../machines/index.js';
export type {
  StopReason,
  RunStatus,
  Usage,
  LoopLimits,
  NoProgressThresholds,
  NoProgressSignal,
  LoopEvent,
  PendingEffect,
} from '../machines/index.js';
