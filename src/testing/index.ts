/**
 * `loopstate/testing`: deterministic doubles for tests and offline runs.
 */
export { scriptedModel } from './scripted-model.js';
export type { ScriptedModel, ScriptedModelOptions } from './scripted-model.js';
export {
  reply,
  toolCall,
  emptyReply,
  modelError,
  modelErrorKindForStatus,
  DEFAULT_SCRIPTED_USAGE,
} from './script-steps.js';
export type {
  ScriptStep,
  ScriptStepResult,
  ScriptedResponse,
  ScriptedFailure,
  ScriptedToolCall,
  ScriptedToolCallData,
  StepUsageOptions,
  ModelErrorStepOptions,
} from './script-steps.js';
export { ScriptExhaustedError } from './script-exhausted-error.js';
export { virtualClock, type VirtualClock } from './virtual-clock.js';
export { storeContract, type StoreContractCheck, type StoreContractOptions } from './store-contract/store-contract.js';
export { StoreContractError } from './store-contract/store-contract-error.js';
