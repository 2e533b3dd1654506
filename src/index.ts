/**
 * loopstate: bounded LLM agent loops as explicit XState v5 statecharts.
 * Public API only; test doubles live in `loopstate/testing`.
 */
export { createLoop, type Loop } from './loop.js';
export type { LoopConfig, TaskConfig, TaskPromptContext, RunInput } from './config.js';
export type { RunResult, PendingApproval } from './runtime/run-result.js';
export { defineTool, checkToolPolicy, ToolHealth, ToolCallError, isCallerFault } from './tools/index.js';
export type { Tool, ToolDefinition, ToolAccess, ToolContext, ToolPolicy, PolicyVerdict, OutcomeLookup, ToolHealthStats, ToolFailureBlame } from './tools/index.js';
export { evaluators, runEvaluators } from './evaluators/index.js';
export type { Evaluator, EvaluationInput, EvaluationResult, EvaluationSummary, EvaluateOption, EvaluatorOutput, EvaluatorsOutput, LoopOutput } from './evaluators/index.js';
export type { Model, ModelRequest, ModelResponse, ModelUsage, Message, ToolSpec, ToolCallRequest } from './model/types.js';
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
export { DEFAULT_LIMITS, DEFAULT_NO_PROGRESS, DEFAULT_PRICES, type ModelPrice } from './constants.js';
export { DEFAULT_CONTEXT } from './constants.js';
export type { ContextOptions, ContextStrategy } from './context/context-window.js';
export { systemClock, type Clock } from './runtime/clock.js';
export type { TraceEvent, TraceOptions } from './trace/trace-event.js';
export type { RedactOptions } from './redaction/redact.js';
export { statelyInspector, type StatelyInspector, type StatelyInspectorOptions, type StatelyInspectorStatus } from './inspect/stately-inspector.js';
export type { InspectOption } from './inspect/inspect-option.js';
export { loopMachine, getPendingEffect, STOP_REASONS } from '../machines/index.js';
export type { StopReason, RunStatus, Usage, LoopLimits, NoProgressThresholds, NoProgressSignal, LoopEvent, PendingEffect } from '../machines/index.js';
