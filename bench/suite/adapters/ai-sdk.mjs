/**
 * Vercel AI SDK: `generateText` with tools and `stopWhen: stepCountIs(steps)`. The model is a plain
 * provider-less `LanguageModelV3` object (what `ai/test`'s MockLanguageModelV3 wraps, minus its
 * per-call recording, which would grow with every call and skew the memory figures).
 */
import { generateText, stepCountIs, tool } from 'ai';
import { z } from 'zod';
import { decide, lookupValue, sleep, TOOL_DESCRIPTION, TOOL_NAME, USAGE, USER_GOAL } from '../workload.mjs';

function lastMessageText(prompt) {
  const last = prompt[prompt.length - 1];
  if (typeof last.content === 'string') return last.content;
  const part = last.content[last.content.length - 1];
  if (part.type === 'tool-result')
    return typeof part.output.value === 'string' ? part.output.value : JSON.stringify(part.output.value);
  return part.text ?? '';
}

const usage = () => ({
  inputTokens: { total: USAGE.inputTokens, noCache: USAGE.inputTokens, cacheRead: undefined, cacheWrite: undefined },
  outputTokens: { total: USAGE.outputTokens, text: USAGE.outputTokens, reasoning: undefined },
});

export function createRunner({ steps, latencyMs }) {
  const model = {
    specificationVersion: 'v3',
    provider: 'bench',
    modelId: 'instant',
    supportedUrls: {},
    async doGenerate(options) {
      if (latencyMs > 0) await sleep(latencyMs);
      const call = decide(lastMessageText(options.prompt), steps);
      if (call === null)
        return {
          content: [{ type: 'text', text: '{"done":true}' }],
          finishReason: { unified: 'stop', raw: 'stop' },
          usage: usage(),
          warnings: [],
        };
      return {
        content: [{ type: 'tool-call', toolCallId: call.callId, toolName: TOOL_NAME, input: call.arguments }],
        finishReason: { unified: 'tool-calls', raw: 'tool_calls' },
        usage: usage(),
        warnings: [],
      };
    },
    async doStream() {
      throw new Error('the benchmark does not stream');
    },
  };
  const tools = {
    [TOOL_NAME]: tool({
      description: TOOL_DESCRIPTION,
      inputSchema: z.object({ key: z.string() }),
      execute: ({ key }) => lookupValue(key),
    }),
  };
  return {
    async run() {
      const result = await generateText({ model, tools, prompt: USER_GOAL, stopWhen: stepCountIs(steps) });
      return JSON.parse(result.text);
    },
  };
}
