/**
 * The small model interface every provider implements (DESIGN §9): messages and tool specs in,
 * text and/or tool calls plus usage out. Failures are thrown as `ModelCallError`.
 */

export interface ToolCallRequest {
  /** Provider-assigned id that the tool result must echo. */
  id: string;
  name: string;
  /** Raw JSON text of the arguments, exactly as the model produced it (it may be malformed). */
  arguments: string;
}

export type Message =
  | { role: 'system'; content: string }
  | { role: 'user'; content: string }
  | { role: 'assistant'; content: string | null; toolCalls?: readonly ToolCallRequest[] }
  | { role: 'tool'; toolCallId: string; content: string };

/** A tool as offered to the model: its JSON Schema comes from the zod input schema. */
export interface ToolSpec {
  name: string;
  description: string;
  parameters: Record<string, unknown>;
}

export interface ModelRequest {
  messages: readonly Message[];
  tools: readonly ToolSpec[];
  /** Aborted on cancel, deadline or per-call timeout. */
  signal: AbortSignal;
}

export interface ModelUsage {
  inputTokens: number;
  outputTokens: number;
}

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
  generate(request: ModelRequest): Promise<ModelResponse>;
}
