/**
 * `@langchain/langgraph`: a StateGraph over MessagesAnnotation with an `agent` node (a BaseChatModel
 * subclass that answers instantly) and the prebuilt ToolNode, routed by `toolsCondition`; with
 * `checkpointer: true` it is compiled with a MemorySaver and each run uses its own thread, deleted
 * after the run so the saver does not grow across runs.
 */
import { BaseChatModel } from '@langchain/core/language_models/chat_models';
import { AIMessage } from '@langchain/core/messages';
import { tool } from '@langchain/core/tools';
import { END, MemorySaver, MessagesAnnotation, START, StateGraph } from '@langchain/langgraph';
import { ToolNode, toolsCondition } from '@langchain/langgraph/prebuilt';
import { z } from 'zod';
import { decide, lookupValue, sleep, TOOL_DESCRIPTION, TOOL_NAME, USAGE, USER_GOAL } from '../workload.mjs';

class InstantChatModel extends BaseChatModel {
  constructor(steps, latencyMs) {
    super({});
    this.steps = steps;
    this.latencyMs = latencyMs;
  }

  _llmType() {
    return 'bench-instant';
  }

  async _generate(messages) {
    if (this.latencyMs > 0) await sleep(this.latencyMs);
    const last = messages[messages.length - 1];
    const call = decide(typeof last.content === 'string' ? last.content : JSON.stringify(last.content), this.steps);
    const usage_metadata = {
      input_tokens: USAGE.inputTokens,
      output_tokens: USAGE.outputTokens,
      total_tokens: USAGE.inputTokens + USAGE.outputTokens,
    };
    const message =
      call === null
        ? new AIMessage({ content: '{"done":true}', usage_metadata })
        : new AIMessage({
            content: '',
            tool_calls: [{ id: call.callId, name: TOOL_NAME, args: JSON.parse(call.arguments), type: 'tool_call' }],
            usage_metadata,
          });
    return { generations: [{ text: typeof message.content === 'string' ? message.content : '', message }] };
  }
}

/**
 * The suite's graph on the shared workload, compiled with `checkpointer` (any LangGraph checkpoint saver)
 * or without one.
 */
export function createGraph({ steps, latencyMs, checkpointer }) {
  const lookup = tool(({ key }) => lookupValue(key), {
    name: TOOL_NAME,
    description: TOOL_DESCRIPTION,
    schema: z.object({ key: z.string() }),
  });
  const model = new InstantChatModel(steps, latencyMs);
  const graph = new StateGraph(MessagesAnnotation)
    .addNode('agent', async (state) => ({ messages: [await model.invoke(state.messages)] }))
    .addNode('tools', new ToolNode([lookup]))
    .addEdge(START, 'agent')
    .addConditionalEdges('agent', toolsCondition, ['tools', END])
    .addEdge('tools', 'agent');
  return graph.compile(checkpointer ? { checkpointer } : {});
}

/** One run of the graph (on thread `threadId` when it has a checkpointer); resolves to its final state. */
export function invokeGraph(app, steps, threadId) {
  const config = {
    recursionLimit: 2 * steps + 10,
    ...(threadId === undefined ? {} : { configurable: { thread_id: threadId } }),
  };
  return app.invoke({ messages: [{ role: 'user', content: USER_GOAL }] }, config);
}

export function createRunner({ steps, latencyMs, checkpointer = false }) {
  const saver = checkpointer ? new MemorySaver() : undefined;
  const app = createGraph({ steps, latencyMs, checkpointer: saver });
  let thread = 0;
  return {
    async run() {
      const threadId = saver ? `t${++thread}` : undefined;
      const state = await invokeGraph(app, steps, threadId);
      if (saver) await saver.deleteThread(threadId);
      const last = state.messages[state.messages.length - 1];
      return JSON.parse(last.content);
    },
  };
}
