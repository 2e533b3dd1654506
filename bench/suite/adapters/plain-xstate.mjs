/** Plain XState v5: one actor per run, the model and the tool as invoked promise actors. */
import { assign, createActor, fromPromise, setup, toPromise } from 'xstate';
import { z } from 'zod';
import { decide, lookupValue, sleep, TOOL_NAME, USAGE, USER_GOAL } from '../workload.mjs';

const lookupInput = z.object({ key: z.string() });

export function createRunner({ steps, latencyMs }) {
  const machine = setup({
    actors: {
      callModel: fromPromise(async ({ input }) => {
        if (latencyMs > 0) await sleep(latencyMs);
        const call = decide(input.messages[input.messages.length - 1].content, steps);
        if (call === null) return { text: '{"done":true}', toolCalls: [], usage: USAGE };
        return {
          text: null,
          toolCalls: [{ id: call.callId, name: TOOL_NAME, arguments: call.arguments }],
          usage: USAGE,
        };
      }),
      callTool: fromPromise(async ({ input }) => {
        const args = lookupInput.parse(JSON.parse(input.call.arguments));
        return { role: 'tool', toolCallId: input.call.id, content: await lookupValue(args.key) };
      }),
    },
    guards: {
      hasToolCalls: ({ event }) => event.output.toolCalls.length > 0,
    },
  }).createMachine({
    id: 'loop',
    context: () => ({ messages: [{ role: 'user', content: USER_GOAL }], pending: null, answer: null }),
    initial: 'callingModel',
    states: {
      callingModel: {
        invoke: {
          src: 'callModel',
          input: ({ context }) => ({ messages: context.messages }),
          onDone: [
            {
              guard: 'hasToolCalls',
              target: 'callingTool',
              actions: assign(({ context, event }) => ({
                messages: [
                  ...context.messages,
                  { role: 'assistant', content: null, toolCalls: event.output.toolCalls },
                ],
                pending: event.output.toolCalls[0],
              })),
            },
            {
              target: 'done',
              actions: assign(({ event }) => ({ answer: JSON.parse(event.output.text) })),
            },
          ],
        },
      },
      callingTool: {
        invoke: {
          src: 'callTool',
          input: ({ context }) => ({ call: context.pending }),
          onDone: {
            target: 'callingModel',
            actions: assign(({ context, event }) => ({ messages: [...context.messages, event.output], pending: null })),
          },
        },
      },
      done: { type: 'final' },
    },
    output: ({ context }) => context.answer,
  });
  return {
    run() {
      const actor = createActor(machine);
      const finished = toPromise(actor);
      actor.start();
      return finished;
    },
  };
}
