/**
 * The durable tests' usual workload: an idempotent `lookup` tool and a scripted model that asks for one lookup a
 * step, counting its call from the assistant messages (so a resumed run's new model object goes on where the
 * journal left off), and can hang at one call to stand in for a process that dies there.
 */
import { z } from 'zod';
import { defineTool, type Model, type ModelRequest } from 'loopstate';

export const lookup = defineTool({
  name: 'lookup',
  description: 'Look a key up',
  input: z.object({ key: z.string() }),
  access: 'read',
  idempotent: true,
  execute: ({ key }) => `value ${key}`,
});

/**
 * Call n asks to look up `keyOf(n)`, or answers `done` when that is null; the call at `hangAt` never answers.
 * Every request is pushed to `requests` when given (to compare a resumed run's next request).
 */
export function lookupModel(
  keyOf: (call: number) => string | null,
  hangAt: number | null,
  onHang: () => void = () => undefined,
  requests?: ModelRequest[],
): Model {
  return {
    id: 'scripted',
    generate(request) {
      requests?.push(request);
      const given = request.messages.filter((message) => message.role === 'assistant').length;
      if (given === hangAt) {
        onHang();
        return new Promise(() => undefined);
      }
      const usage = { inputTokens: 10, outputTokens: 2 };
      const key = keyOf(given);
      if (key === null) return Promise.resolve({ text: 'done', toolCalls: [], usage });
      return Promise.resolve({
        text: null,
        toolCalls: [{ id: `c${given}`, name: 'lookup', arguments: JSON.stringify({ key }) }],
        usage,
      });
    },
  };
}
