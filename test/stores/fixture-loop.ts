/**
 * The loop of the SQLite fixtures (fixtures/sqlite-schema-5.db, sqlite-schema-6.db): a `lookup` call a step (call n
 * asks for key k<n>), the answer at step `total`; each request kept in `requests` when given. The fixtures were
 * written by this very loop: keep it as it is.
 */
import { z } from 'zod';
import { createLoop, defineTool, type Message, type Model } from 'loopstate';
import type { sqliteStore } from 'loopstate/sqlite';

export function fixtureLoop(
  total: number,
  store: ReturnType<typeof sqliteStore>,
  requests: (readonly Message[])[] = [],
) {
  const callNumber = (messages: readonly Message[]) => {
    const last = [...messages].reverse().find((message) => message.role === 'assistant');
    return last === undefined ? 1 : Number(last.toolCalls![0]!.id.slice(1)) + 1;
  };
  const model: Model = {
    id: 'scripted',
    generate(request) {
      requests.push(structuredClone(request.messages));
      const call = callNumber(request.messages);
      const usage = { inputTokens: 50, outputTokens: 10 };
      if (call < total)
        return Promise.resolve({
          text: null,
          toolCalls: [{ id: `c${call}`, name: 'lookup', arguments: `{"key":"k${call}"}` }],
          usage,
        });
      return Promise.resolve({ text: '{"done":true}', toolCalls: [], usage });
    },
  };
  return createLoop({
    model,
    tools: [
      defineTool({
        name: 'lookup',
        description: 'Look a key up.',
        input: z.object({ key: z.string() }),
        access: 'read',
        execute: ({ key }) => `value ${key}`,
      }),
    ],
    limits: { maxSteps: total + 1, maxToolCalls: total },
    store,
  });
}
