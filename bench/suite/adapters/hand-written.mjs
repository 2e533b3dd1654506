/** Baseline: the loop written by hand, with the same model, tool, argument validation and final JSON parse. */
import { z } from 'zod';
import { decide, lookupValue, sleep, TOOL_NAME, USAGE, USER_GOAL } from '../workload.mjs';

const lookupInput = z.object({ key: z.string() });

export function createRunner({ steps, latencyMs }) {
  async function generate(messages) {
    if (latencyMs > 0) await sleep(latencyMs);
    const call = decide(messages[messages.length - 1].content, steps);
    if (call === null) return { text: '{"done":true}', toolCalls: [], usage: USAGE };
    return { text: null, toolCalls: [{ id: call.callId, name: TOOL_NAME, arguments: call.arguments }], usage: USAGE };
  }
  return {
    async run() {
      const messages = [{ role: 'user', content: USER_GOAL }];
      for (;;) {
        const response = await generate(messages);
        messages.push({ role: 'assistant', content: response.text, toolCalls: response.toolCalls });
        if (response.toolCalls.length === 0) return JSON.parse(response.text);
        for (const call of response.toolCalls) {
          const args = lookupInput.parse(JSON.parse(call.arguments));
          messages.push({ role: 'tool', toolCallId: call.id, content: await lookupValue(args.key) });
        }
      }
    },
  };
}
