/**
 * The OpenTelemetry GenAI semantic conventions as loopstate maps them: every attribute, metric and
 * span name, and how a trace event becomes attributes. None of the GenAI names is stable yet, so they
 * all live here, copied from the registry (`@opentelemetry/semantic-conventions/incubating`, a dev
 * dependency only, as its authors advise): a rename upstream is a change to this file, and a test
 * compares every name with the registry.
 */
import type { Attributes } from '@opentelemetry/api';
import type { ModelServer, ModelSettings } from '../../../contracts/model.js';
import type { TraceEvent } from '../../../contracts/trace-schema.js';

/**
 * The semantic conventions version these attribute, metric and span names follow.
 * @example
 * span.setAttribute('loopstate.semconv_version', GEN_AI_SEMCONV_VERSION);
 */
export const GEN_AI_SEMCONV_VERSION = '1.45.0';

/** The GenAI and general attributes we emit, as the registry names them. */
export const GEN_AI_ATTRIBUTES = {
  operationName: 'gen_ai.operation.name',
  providerName: 'gen_ai.provider.name',
  agentName: 'gen_ai.agent.name',
  conversationId: 'gen_ai.conversation.id',
  requestModel: 'gen_ai.request.model',
  requestTemperature: 'gen_ai.request.temperature',
  requestTopP: 'gen_ai.request.top_p',
  requestMaxTokens: 'gen_ai.request.max_tokens',
  requestSeed: 'gen_ai.request.seed',
  requestStopSequences: 'gen_ai.request.stop_sequences',
  requestPresencePenalty: 'gen_ai.request.presence_penalty',
  requestFrequencyPenalty: 'gen_ai.request.frequency_penalty',
  responseModel: 'gen_ai.response.model',
  responseId: 'gen_ai.response.id',
  responseFinishReasons: 'gen_ai.response.finish_reasons',
  inputTokens: 'gen_ai.usage.input_tokens',
  outputTokens: 'gen_ai.usage.output_tokens',
  cacheReadInputTokens: 'gen_ai.usage.cache_read.input_tokens',
  reasoningOutputTokens: 'gen_ai.usage.reasoning.output_tokens',
  tokenType: 'gen_ai.token.type',
  toolName: 'gen_ai.tool.name',
  toolCallId: 'gen_ai.tool.call.id',
  toolType: 'gen_ai.tool.type',
  serverAddress: 'server.address',
  serverPort: 'server.port',
  errorType: 'error.type',
} as const;

/** loopstate's own attributes, for what the conventions do not cover; all under `loopstate.`. */
export const LOOPSTATE_ATTRIBUTES = {
  runId: 'loopstate.run.id',
  promptVersion: 'loopstate.prompt.version',
  taskId: 'loopstate.task.id',
  step: 'loopstate.step',
  decision: 'loopstate.decision',
  costUsd: 'loopstate.cost_usd',
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

/** Every attribute name, GenAI and loopstate's, by one key. */
export const ATTRIBUTES = { ...GEN_AI_ATTRIBUTES, ...LOOPSTATE_ATTRIBUTES } as const;

/** `gen_ai.operation.name` values. */
export const OPERATIONS = { agent: 'invoke_agent', chat: 'chat', tool: 'execute_tool' } as const;

/** `gen_ai.token.type` values. */
export const TOKEN_TYPES = { input: 'input', output: 'output' } as const;

/**
 * `gen_ai.provider.name` of a model that does not name its provider. The attribute is required, and a
 * guess from the model id would often be wrong (an OpenAI-compatible server hosts other vendors' models).
 */
export const UNKNOWN_PROVIDER = 'unknown';

/** The GenAI client metrics, with the units and explicit bucket boundaries the conventions advise. */
export const METRICS = {
  tokenUsage: {
    name: 'gen_ai.client.token.usage',
    unit: '{token}',
    description: 'Number of input and output tokens used.',
    boundaries: [1, 4, 16, 64, 256, 1024, 4096, 16384, 65536, 262144, 1048576, 4194304, 16777216, 67108864],
  },
  operationDuration: {
    name: 'gen_ai.client.operation.duration',
    unit: 's',
    description: 'GenAI operation duration.',
    boundaries: [0.01, 0.02, 0.04, 0.08, 0.16, 0.32, 0.64, 1.28, 2.56, 5.12, 10.24, 20.48, 40.96, 81.92],
  },
} as const;

/** Span names: `{operation} {target}` as the conventions ask. */
export const spanNames = {
  run: (agentName: string) => `${OPERATIONS.agent} ${agentName}`,
  step: 'loopstate.step',
  chat: (model: string) => `${OPERATIONS.chat} ${model}`,
  tool: (tool: string) => `${OPERATIONS.tool} ${tool}`,
};

/** What the run knows about its model and itself before any call: the same for every span and metric of the run. */
export interface GenAiSubject {
  agentName: string;
  modelId: string;
  /** The provider's name of the model, when the id is not it (see `Model.modelName`). */
  modelName?: string;
  provider?: string;
  server?: ModelServer;
  settings?: Omit<ModelSettings, 'stopSequences'> & { stopSequences?: readonly string[] };
}

/** `gen_ai.request.model` of a call to `modelId`: the loop model's provider name for it, another model's id as it is. */
export function requestModelOf(subject: GenAiSubject, modelId: string): string {
  return modelId === subject.modelId ? (subject.modelName ?? modelId) : modelId;
}

/** `gen_ai.provider.name` and `server.*`: on every span and metric of a model call. */
export function providerAttributes(subject: GenAiSubject): Attributes {
  const attributes: Attributes = { [ATTRIBUTES.providerName]: subject.provider ?? UNKNOWN_PROVIDER };
  if (subject.server !== undefined) {
    attributes[ATTRIBUTES.serverAddress] = subject.server.address;
    if (subject.server.port !== undefined) attributes[ATTRIBUTES.serverPort] = subject.server.port;
  }
  return attributes;
}

/** `gen_ai.request.*` of the model's own settings, each only where set. */
export function requestAttributes(subject: GenAiSubject): Attributes {
  const attributes: Attributes = { [ATTRIBUTES.requestModel]: subject.modelName ?? subject.modelId };
  const settings = subject.settings;
  if (settings === undefined) return attributes;
  const numeric: [string, number | undefined][] = [
    [ATTRIBUTES.requestTemperature, settings.temperature],
    [ATTRIBUTES.requestTopP, settings.topP],
    [ATTRIBUTES.requestMaxTokens, settings.maxOutputTokens],
    [ATTRIBUTES.requestSeed, settings.seed],
    [ATTRIBUTES.requestPresencePenalty, settings.presencePenalty],
    [ATTRIBUTES.requestFrequencyPenalty, settings.frequencyPenalty],
  ];
  for (const [name, value] of numeric) if (value !== undefined) attributes[name] = value;
  if (settings.stopSequences !== undefined) attributes[ATTRIBUTES.requestStopSequences] = [...settings.stopSequences];
  return attributes;
}

type StepEnd = Extract<TraceEvent, { type: 'step-end' }>;

/** `gen_ai.response.*` and `gen_ai.usage.*` of one answered call. */
export function responseAttributes(event: StepEnd): Attributes {
  const attributes: Attributes = {
    [ATTRIBUTES.inputTokens]: event.inputTokens,
    [ATTRIBUTES.outputTokens]: event.outputTokens,
  };
  if (event.cachedInputTokens !== undefined) attributes[ATTRIBUTES.cacheReadInputTokens] = event.cachedInputTokens;
  if (event.reasoningTokens !== undefined) attributes[ATTRIBUTES.reasoningOutputTokens] = event.reasoningTokens;
  const metadata = event.metadata;
  if (metadata?.id !== undefined) attributes[ATTRIBUTES.responseId] = metadata.id;
  if (metadata?.model !== undefined) attributes[ATTRIBUTES.responseModel] = metadata.model;
  if (metadata?.finishReason !== undefined) attributes[ATTRIBUTES.responseFinishReasons] = [metadata.finishReason];
  return attributes;
}

/** The attributes a metric of one model call carries (low-cardinality ones only: no ids). */
export function metricAttributes(subject: GenAiSubject, responseModel: string | undefined): Attributes {
  const attributes: Attributes = {
    [ATTRIBUTES.operationName]: OPERATIONS.chat,
    ...providerAttributes(subject),
    [ATTRIBUTES.requestModel]: subject.modelName ?? subject.modelId,
  };
  if (responseModel !== undefined) attributes[ATTRIBUTES.responseModel] = responseModel;
  return attributes;
}
