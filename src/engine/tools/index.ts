/**
 * The tool layer: definitions, policy, health, classification of the model's calls and the round runner.
 */
export {
  defineTool,
  idempotencyKey,
  TOOL_ACCESS_LEVELS,
  type OutcomeLookup,
  type Tool,
  type ToolAccess,
  type ToolContext,
  type ToolDefinition,
} from './define-tool.js';
export { checkToolPolicy, DEFAULT_TOOL_POLICY, type PolicyVerdict, type ToolPolicy } from './policy.js';
export { ToolHealth, type ToolHealthStats, type CircuitState, type LearnedToolHealth } from './tool-health.js';
export { isCallerFault, ToolCallError, type ToolFailureBlame } from './tool-call-error.js';
export { assignUniqueCallIds } from './unique-call-ids.js';
export {
  prepareToolCalls,
  type PrepareToolCallsOptions,
  type PreparedCall,
  type PreparedCallStatus,
} from './prepare-calls.js';
export { capBytes, type CappedText } from './cap-bytes.js';
export { runToolRound, type RunToolRoundOptions, type ToolCallOutcome } from './run-tools.js';
