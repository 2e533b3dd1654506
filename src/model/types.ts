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
 * What a model is asked: the transcript, the tools on offer and an abort signal.
 * @example
 * const response = await model.generate({ messages, tools: [tool.spec], signal: AbortSignal.timeout(30_000) });
 */
export interface ModelRequest {
  messages: readonly Message[];
  tools: readonly ToolSpec[];
  /** Aborted on cancel, deadline or per-call timeout. */
  signal: AbortSignal;
}

/**
 * Tokens one model call consumed.
 * @example
 * const usage: ModelUsage = { inputTokens: 1_200, outputTokens: 80 };
 */
export interface ModelUsage {
  inputTokens: number;
  outputTokens: number;
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
   * Input tokens one request may carry, when the adapter knows it (its context window less what
   * it keeps for the reply). Used as the default of `context.maxInputTokensPerCall`.
   */
  readonly contextWindowTokens?: number;
  generate(request: ModelRequest): Promise<ModelResponse>;
}
