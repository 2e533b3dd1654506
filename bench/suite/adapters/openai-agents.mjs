/** `@openai/agents`: an Agent and a Runner with a custom Model that returns function calls, tracing off. */
import { Agent, Runner, Usage, setTracingDisabled, tool } from '@openai/agents';
import { z } from 'zod';
import { decide, lookupValue, sleep, TOOL_DESCRIPTION, TOOL_NAME, USAGE, USER_GOAL } from '../workload.mjs';

setTracingDisabled(true);

function lastItemText(input) {
  if (typeof input === 'string') return input;
  const last = input[input.length - 1];
  if (last.type === 'function_call_result')
    return typeof last.output === 'string' ? last.output : (last.output.text ?? JSON.stringify(last.output));
  return typeof last.content === 'string' ? last.content : JSON.stringify(last.content);
}

class InstantModel {
  constructor(steps, latencyMs) {
    this.steps = steps;
    this.latencyMs = latencyMs;
  }

  async getResponse(request) {
    if (this.latencyMs > 0) await sleep(this.latencyMs);
    const call = decide(lastItemText(request.input), this.steps);
    const usage = new Usage({
      requests: 1,
      inputTokens: USAGE.inputTokens,
      outputTokens: USAGE.outputTokens,
      totalTokens: USAGE.inputTokens + USAGE.outputTokens,
    });
    if (call === null) {
      return {
        usage,
        output: [
          {
            type: 'message',
            role: 'assistant',
            status: 'completed',
            content: [{ type: 'output_text', text: '{"done":true}' }],
          },
        ],
      };
    }
    return {
      usage,
      output: [
        { type: 'function_call', callId: call.callId, name: TOOL_NAME, arguments: call.arguments, status: 'completed' },
      ],
    };
  }

  // eslint-disable-next-line require-yield
  async *getStreamedResponse() {
    throw new Error('the benchmark does not stream');
  }
}

export function createRunner({ steps, latencyMs }) {
  const lookup = tool({
    name: TOOL_NAME,
    description: TOOL_DESCRIPTION,
    parameters: z.object({ key: z.string() }),
    execute: ({ key }) => lookupValue(key),
  });
  const agent = new Agent({
    name: 'bench',
    instructions: 'Use the lookup tool.',
    model: new InstantModel(steps, latencyMs),
    tools: [lookup],
  });
  const runner = new Runner({ tracingDisabled: true });
  return {
    async run() {
      const result = await runner.run(agent, USER_GOAL, { maxTurns: steps + 1 });
      return JSON.parse(result.finalOutput);
    },
  };
}
