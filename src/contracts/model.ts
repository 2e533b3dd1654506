/**
 * One tool call as the model produced it.
 * @example
 * const call: ToolCallRequest = { id: 'call_1', name: 'get_order_status', arguments: '{"order_id":"O-101"}' };
 */
export interface ToolCallRequest {
  /** Provider-assigned id that the tool result must echo. */
  id: string;
  name: string;
  /** Raw JSON text of the arguments, exactly as the model produced it (it may be malformed). */
  arguments: string;
}

/**
 * One message of a model request.
 * @example
 * const messages: Message[] = [{ role: 'system', content: 'Be brief.' }, { role: 'user', content: 'Status of O-101?' }];
 */
export type Message =
  | { role: 'system'; content: string }
  | { role: 'user'; content: string }
  | { role: 'assistant'; content: string | null; toolCalls?: readonly ToolCallRequest[] }
  | { role: 'tool'; toolCallId: string; content: string };

/**
 * A tool as offered to the model: its JSON Schema comes from the zod input schema.
 * @example
 * const spec: ToolSpec = getOrderStatus.spec; // { name, description, parameters: { type: 'object', ... } }
 */
export interface ToolSpec {
  name: string;
  description: string;
  parameters: Record<string, unknown>;
}

/**
 * The JSON shape the final answer must have, when the task's evaluators know it (`evaluators.schema`).
 * An adapter may ask its provider for it (OpenAI: `response_format: json_schema`) or ignore it.
 * @example
 * const format: ResponseFormat = { type: 'json_schema', name: 'answer', schema: { type: 'object', properties: { status: { type: 'string' } }, required: ['status'] } };
 */
export interface ResponseFormat {
  type: 'json_schema';
  /** A short name for the schema (letters, digits, `_` and `-`). */
  name: string;
  /** JSON Schema of the answer, as `z.toJSONSchema` writes it. */
  schema: Record<string, unknown>;
}

/**
 * Sampling and length settings of one call; an adapter passes on those its provider knows.
 * `undefined` means the provider's default.
 * @example
 * const settings: ModelSettings = { temperature: 0, maxOutputTokens: 800, seed: 7 };
 */
export interface ModelSettings {
  temperature?: number;
  topP?: number;
  /** Upper bound on the reply's tokens (reasoning tokens included, where the provider counts them). */
  maxOutputTokens?: number;
  seed?: number;
  stopSequences?: readonly string[];
  presencePenalty?: number;
  frequencyPenalty?: number;
  /** For reasoning models: how hard to think. */
  reasoningEffort?: 'minimal' | 'low' | 'medium' | 'high';
}

/**
 * Something a streaming adapter saw arrive before its reply was complete.
 * @example
 * const progress: ModelProgress = { type: 'text_delta', text: 'Ship' };
 */
export type ModelProgress =
  { type: 'text_delta'; text: string } | { type: 'tool_call_started'; callId: string; name: string };

/**
 * What a model is asked: the transcript, the tools on offer and an abort signal.
 * @example
 * const response = await model.generate({ messages, tools: [tool.spec], signal: AbortSignal.timeout(30_000) });
 */
export interface ModelRequest {
  messages: readonly Message[];
  tools: readonly ToolSpec[];
  /** Aborted on cancel, deadline or per-call timeout. */
  signal: AbortSignal;
  /** The answer's JSON shape, from the task's schema evaluator; absent when the task has none. */
  responseFormat?: ResponseFormat;
  /** Per-call settings, over the adapter's own. */
  settings?: ModelSettings;
  /**
   * Called by streaming adapters as text and tool calls arrive; the loop passes one when `trace.onEvent`
   * is set. The final response is what counts: progress is only a preview.
   */
  onProgress?: (progress: ModelProgress) => void;
}

/**
 * Tokens one model call consumed. `inputTokens` counts every input token, cached ones included;
 * `outputTokens` every output token, reasoning ones included. The two optional counts say how many
 * of those were cached input (priced at the cached rate) and reasoning, when the provider reports it.
 * @example
 * const usage: ModelUsage = { inputTokens: 1_200, outputTokens: 80, cachedInputTokens: 1_024 };
 */
export interface ModelUsage {
  inputTokens: number;
  outputTokens: number;
  /** Of `inputTokens`, those served from the provider's prompt cache. */
  cachedInputTokens?: number;
  /** Of `outputTokens`, those spent on hidden reasoning. */
  reasoningTokens?: number;
}

/**
 * A model's answer: text and/or tool calls, with usage.
 * @example
 * const response: ModelResponse = { text: null, toolCalls: [{ id: 'c1', name: 'search', arguments: '{"q":"refund"}' }], usage: { inputTokens: 300, outputTokens: 12 } };
 */
export interface ModelResponse {
  text: string | null;
  toolCalls: readonly ToolCallRequest[];
  usage: ModelUsage;
  /** What the provider said about the reply, when the adapter knows it: for traces and warnings, never for control flow. */
  metadata?: ModelResponseMetadata;
}

/**
 * Why the provider stopped generating, in one vocabulary for every adapter: `stop` (a natural end),
 * `tool_calls`, `length` (the output limit cut the reply: the run gets a warning), `content_filter`,
 * `error`, `other`.
 * @example
 * const reason: ModelFinishReason = 'length';
 */
export type ModelFinishReason = 'stop' | 'tool_calls' | 'length' | 'content_filter' | 'error' | 'other';

/**
 * Response metadata an adapter reports (OpenTelemetry's `gen_ai.response.*`). Every field is optional.
 * @example
 * const metadata: ModelResponseMetadata = { id: 'chatcmpl-123', model: 'gpt-4.1-mini-2025-04-14', finishReason: 'stop' };
 */
export interface ModelResponseMetadata {
  /** The provider's id of this response. */
  id?: string;
  /** The model that actually answered (it may differ from the requested `Model.id`, e.g. a dated snapshot). */
  model?: string;
  finishReason?: ModelFinishReason;
  /** The provider's own finish reason, when it was not one of ours (or to keep its spelling). */
  rawFinishReason?: string;
}

/**
 * Where a model adapter sends its requests (OpenTelemetry's `server.address` and `server.port`).
 * @example
 * const server: ModelServer = { address: 'api.openai.com', port: 443 };
 */
export interface ModelServer {
  address: string;
  port?: number;
}

/**
 * Anything that can answer a model request: `scriptedModel([...])`, an OpenAI-compatible
 * client, or your own adapter.
 * @example
 * const echo: Model = { id: 'echo', generate: async ({ messages }) => ({ text: 'ok', toolCalls: [], usage: { inputTokens: 1, outputTokens: 1 } }) };
 */
export interface Model {
  /** Model id used for pricing and traces, e.g. `gpt-4.1-mini`. */
  readonly id: string;
  /**
   * The provider, as OpenTelemetry's `gen_ai.provider.name` names it: `openai`, `anthropic`,
   * `gcp.gemini`, `aws.bedrock`, ... An adapter sets it; a custom model may.
   */
  readonly provider?: string;
  /**
   * The model's name as its provider knows it, when `id` is not just that (`aiSdkModel`: `claude-sonnet-4-5` for
   * the id `anthropic.messages:claude-sonnet-4-5`): OpenTelemetry's `gen_ai.request.model`. Defaults to `id`.
   */
  readonly modelName?: string;
  /** The server the adapter talks to, when it knows it. */
  readonly server?: ModelServer;
  /**
   * The sampling and length settings the adapter sends with every call, when it has its own
   * (`openaiModel({ settings })`): traces and spans report them (`gen_ai.request.temperature`, ...).
   */
  readonly settings?: Readonly<ModelSettings>;
  /**
   * Input tokens one request may carry, when the adapter knows it (its context window less what
   * it keeps for the reply). Used as the default of `context.maxInputTokensPerCall`.
   */
  readonly contextWindowTokens?: number;
  /**
   * True for a model that answers from a recording rather than a provider (`replayModel`): nothing
   * upstream can be overloaded, so after a transient failure the loop retries it at once instead of
   * sleeping the backoff (a recorded Retry-After included). The delay is still computed and traced.
   * Leave it out for a live model.
   */
  readonly skipsBackoffWait?: boolean;
  generate(request: ModelRequest): Promise<ModelResponse>;
}

/**
 * USD per million tokens. Override or extend with the `prices` config option.
 * @example
 * createLoop({ model, prices: { 'my-model': { inputPerMillion: 0.2, outputPerMillion: 0.8 } } });
 */
export interface ModelPrice {
  inputPerMillion: number;
  /** Input tokens served from the provider's prompt cache; priced as `inputPerMillion` when left out. */
  cachedInputPerMillion?: number;
  outputPerMillion: number;
}
