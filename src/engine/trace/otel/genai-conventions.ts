/**
 * The OpenTelemetry GenAI semantic conventions as loopstate maps them. None of these attributes is
 * stable yet, so every name lives here, with the convention version it follows: a rename upstream
 * is a change to this file only.
 */

/**
 * The GenAI semantic conventions version these attribute and span names follow.
 * @example
 * span.setAttribute('loopstate.semconv', GEN_AI_SEMCONV_VERSION);
 */
export const GEN_AI_SEMCONV_VERSION = '1.37.0';

/** Attribute names, the GenAI ones first, then loopstate's own (`loopstate.*`) for what the conventions do not cover. */
export const ATTRIBUTES = {
  operationName: 'gen_ai.operation.name',
  requestModel: 'gen_ai.request.model',
  inputTokens: 'gen_ai.usage.input_tokens',
  outputTokens: 'gen_ai.usage.output_tokens',
  toolName: 'gen_ai.tool.name',
  toolCallId: 'gen_ai.tool.call.id',
  toolType: 'gen_ai.tool.type',
  agentName: 'gen_ai.agent.name',
  conversationId: 'gen_ai.conversation.id',
  errorType: 'error.type',
  runId: 'loopstate.run.id',
  promptVersion: 'loopstate.prompt.version',
  taskId: 'loopstate.task.id',
  step: 'loopstate.step',
  decision: 'loopstate.decision',
  costUsd: 'loopstate.cost_usd',
  cachedInputTokens: 'loopstate.usage.cached_input_tokens',
  reasoningTokens: 'loopstate.usage.reasoning_tokens',
  toolStatus: 'loopstate.tool.status',
  toolBytes: 'loopstate.tool.bytes',
  toolTruncated: 'loopstate.tool.truncated',
  observationId: 'loopstate.tool.observation_id',
  stopReason: 'loopstate.stop_reason',
  status: 'loopstate.status',
  detail: 'loopstate.detail',
  steps: 'loopstate.steps',
  modelCalls: 'loopstate.model_calls',
  toolCalls: 'loopstate.tool_calls',
  semconvVersion: 'loopstate.semconv_version',
} as const;

/** `gen_ai.operation.name` values. */
export const OPERATIONS = { agent: 'invoke_agent', chat: 'chat', tool: 'execute_tool' } as const;

/** The agent name on the run span. */
export const AGENT_NAME = 'loopstate';

/** Span names: `{operation} {target}` as the conventions ask. */
export const spanNames = {
  run: `${OPERATIONS.agent} ${AGENT_NAME}`,
  step: 'loopstate.step',
  chat: (model: string) => `${OPERATIONS.chat} ${model}`,
  tool: (tool: string) => `${OPERATIONS.tool} ${tool}`,
};
