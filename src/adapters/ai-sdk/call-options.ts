/**
 * A loopstate request as AI SDK call options: the transcript as the provider prompt, tool specs as function
 * tools, the answer's schema as a JSON response format, the settings under their AI SDK names and the
 * call's signal. One builder serves both specifications: the parts it writes (text, tool calls, text tool
 * results) have the same shape in `LanguageModelV2` and `LanguageModelV3`.
 */
import type {
  JSONValue,
  LanguageModelV3CallOptions,
  LanguageModelV3Message,
  LanguageModelV3ToolResultPart,
  SharedV3ProviderOptions,
} from '@ai-sdk/provider';
import type { Message, ModelRequest, ModelSettings } from '../../contracts/model.js';

/** The tool call's arguments as the value the provider sends back: its JSON, or `{}` when it is not JSON. */
function inputOf(argumentsText: string): unknown {
  if (argumentsText.trim() === '') return {};
  try {
    return JSON.parse(argumentsText) as JSONValue;
  } catch {
    // The model wrote malformed arguments; the tool's answer says so. Providers insist on an object here.
    return {};
  }
}

/**
 * The transcript as the provider prompt. A tool result carries its tool's name, looked up from the assistant
 * message that made the call; consecutive tool results go in one `tool` message, as the AI SDK itself builds them.
 * @example
 * toPrompt([{ role: 'user', content: 'Status of O-1?' }]) // [{ role: 'user', content: [{ type: 'text', text: 'Status of O-1?' }] }]
 */
export function toPrompt(messages: readonly Message[]): LanguageModelV3Message[] {
  const toolNames = new Map<string, string>();
  const prompt: LanguageModelV3Message[] = [];
  for (const message of messages) {
    switch (message.role) {
      case 'system':
        prompt.push({ role: 'system', content: message.content });
        break;
      case 'user':
        prompt.push({ role: 'user', content: [{ type: 'text', text: message.content }] });
        break;
      case 'assistant': {
        const content: Extract<LanguageModelV3Message, { role: 'assistant' }>['content'] = [];
        if (message.content !== null && message.content !== '') content.push({ type: 'text', text: message.content });
        for (const call of message.toolCalls ?? []) {
          toolNames.set(call.id, call.name);
          content.push({ type: 'tool-call', toolCallId: call.id, toolName: call.name, input: inputOf(call.arguments) });
        }
        // An empty assistant turn is refused by some providers; an empty text part keeps the turn order.
        if (content.length === 0) content.push({ type: 'text', text: '' });
        prompt.push({ role: 'assistant', content });
        break;
      }
      case 'tool': {
        const part: LanguageModelV3ToolResultPart = {
          type: 'tool-result',
          toolCallId: message.toolCallId,
          toolName: toolNames.get(message.toolCallId) ?? 'unknown',
          output: { type: 'text', value: message.content },
        };
        const last = prompt.at(-1);
        if (last?.role === 'tool') last.content.push(part);
        else prompt.push({ role: 'tool', content: [part] });
        break;
      }
    }
  }
  return prompt;
}

/** The settings under their AI SDK names; `reasoningEffort` has no portable option (see `providerOptions`). */
function settingsOf(settings: ModelSettings): Partial<LanguageModelV3CallOptions> {
  return {
    ...(settings.temperature === undefined ? {} : { temperature: settings.temperature }),
    ...(settings.topP === undefined ? {} : { topP: settings.topP }),
    ...(settings.maxOutputTokens === undefined ? {} : { maxOutputTokens: settings.maxOutputTokens }),
    ...(settings.seed === undefined ? {} : { seed: settings.seed }),
    ...(settings.stopSequences === undefined ? {} : { stopSequences: [...settings.stopSequences] }),
    ...(settings.presencePenalty === undefined ? {} : { presencePenalty: settings.presencePenalty }),
    ...(settings.frequencyPenalty === undefined ? {} : { frequencyPenalty: settings.frequencyPenalty }),
  };
}

export interface CallOptionsInput {
  request: ModelRequest;
  /** The adapter's settings; the request's own win over them. */
  settings: ModelSettings | undefined;
  structuredOutput: boolean;
  providerOptions: SharedV3ProviderOptions | undefined;
  headers: Record<string, string> | undefined;
}

/**
 * The call options of one request.
 * @example
 * const options = toCallOptions({ request, settings: { temperature: 0 }, structuredOutput: true, providerOptions: undefined, headers: undefined });
 */
export function toCallOptions({
  request,
  settings,
  structuredOutput,
  providerOptions,
  headers,
}: CallOptionsInput): LanguageModelV3CallOptions {
  const format = structuredOutput ? request.responseFormat : undefined;
  return {
    prompt: toPrompt(request.messages),
    ...(request.tools.length === 0
      ? {}
      : {
          tools: request.tools.map((tool) => ({
            type: 'function' as const,
            name: tool.name,
            description: tool.description,
            inputSchema: tool.parameters,
          })),
          toolChoice: { type: 'auto' as const },
        }),
    ...(format === undefined ? {} : { responseFormat: { type: 'json', schema: format.schema, name: format.name } }),
    ...settingsOf({ ...settings, ...request.settings }),
    abortSignal: request.signal,
    ...(providerOptions === undefined ? {} : { providerOptions }),
    ...(headers === undefined ? {} : { headers }),
  };
}
