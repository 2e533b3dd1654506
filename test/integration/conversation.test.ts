/**
 * A loop users can talk to: `run({ messages })` continues a prior conversation and
 * `result.messages` hands back the transcript for the next turn.
 */
import { describe, expect, it } from 'vitest';
import { LoopConfigError, type Message } from 'loopstate';
import { reply, scriptedModel, toolCall } from 'loopstate/testing';
import { createTestLoop, recordingTool, requestAt } from './helpers.js';

const instructions = 'Answer order questions in one sentence.';

async function rejection(run: () => Promise<unknown>): Promise<LoopConfigError> {
  const error: unknown = await run().then(
    () => null,
    (reason: unknown) => reason,
  );
  if (error instanceof LoopConfigError) return error;
  throw new Error(`expected a LoopConfigError, got ${String(error)}`);
}

describe('conversation in and out', () => {
  it('a two-turn chat: turn 2 sees turn 1 (instructions once), and result.messages round-trips', async () => {
    const { tool } = recordingTool({ respond: ({ id }) => ({ id, status: 'shipped' }) });
    const model = scriptedModel([
      toolCall('lookup', { id: 'O-1' }),
      reply('O-1 has shipped.'),
      reply('O-2 is on its way too.'),
    ]);
    const { loop } = createTestLoop({ model, instructions, tools: [tool] });

    const first = await loop.run({ goal: 'Where is O-1?' });
    expect(first.stopReason).toBe('completed');
    expect(first.messages.map((message) => message.role)).toEqual(['system', 'user', 'assistant', 'tool', 'assistant']);
    expect(first.messages.at(-1)).toEqual({ role: 'assistant', content: 'O-1 has shipped.' });
    // A plain copy: JSON round-trip (as a chat app would store it) changes nothing.
    const stored = JSON.parse(JSON.stringify(first.messages)) as Message[];
    expect(stored).toEqual(first.messages);

    const second = await loop.run({ goal: 'And O-2?', messages: stored });
    expect(second.stopReason).toBe('completed');
    const request = requestAt(model, 2);
    expect(request).toEqual([...first.messages, { role: 'user', content: 'And O-2?' }]);
    expect(request.filter((message) => message.role === 'system')).toHaveLength(1);
    expect(second.messages).toEqual([...request, { role: 'assistant', content: 'O-2 is on its way too.' }]);
    model.assertComplete();
  });

  it('continues a conversation without a goal: its last user message is the task', async () => {
    const model = scriptedModel([reply('Yes, it has shipped.')]);
    const { loop } = createTestLoop({ model, instructions });
    const messages: Message[] = [
      { role: 'user', content: 'Where is O-1?' },
      { role: 'assistant', content: 'O-1 has shipped.' },
      { role: 'user', content: 'Are you sure?' },
    ];
    const result = await loop.run({ messages });
    expect(result.stopReason).toBe('completed');
    expect(requestAt(model, 0)).toEqual([{ role: 'system', content: instructions }, ...messages]);
    const runStart = result.trace.find((event) => event.type === 'run-start');
    expect(runStart).toMatchObject({ goalSummary: 'Are you sure?' });
  });

  it('replaces a leading system message that differs from the instructions, with a warning', async () => {
    const model = scriptedModel([reply('ok')]);
    const { loop } = createTestLoop({ model, instructions });
    const result = await loop.run({
      goal: 'Hi',
      messages: [
        { role: 'system', content: 'Old instructions.' },
        { role: 'user', content: 'Hello' },
        { role: 'assistant', content: 'Hi!' },
      ],
    });
    expect(requestAt(model, 0).map((message) => message.content)).toEqual([instructions, 'Hello', 'Hi!', 'Hi']);
    expect(result.warnings).toContain(
      "messages[0] (system) differs from the loop's instructions; the instructions were used instead",
    );
  });

  it('with tasks, the prior conversation is the context of the first task only', async () => {
    const model = scriptedModel([reply('classified'), reply('drafted')]);
    const { loop } = createTestLoop({
      model,
      tasks: [
        { id: 'classify', prompt: 'Classify it' },
        { id: 'draft', prompt: 'Draft it' },
      ],
    });
    const prior: Message[] = [
      { role: 'user', content: 'Context from earlier' },
      { role: 'assistant', content: 'Noted.' },
    ];
    const result = await loop.run({ goal: 'Weekly report', messages: prior });
    expect(result.stopReason).toBe('completed');
    expect(requestAt(model, 0).slice(0, 2)).toEqual(prior);
    expect(requestAt(model, 1).map((message) => message.content)).not.toContain('Context from earlier');
    expect(result.messages.at(-1)).toEqual({ role: 'assistant', content: 'drafted' });
  });

  it('a run stopped before its calls ran hands back a conversation that can be passed in again', async () => {
    const { tool } = recordingTool({ name: 'refund', access: 'destructive' });
    const model = scriptedModel([toolCall('refund', { id: 'O-1' }, { id: 'c1' }), reply('Refund needs approval.')]);
    const { loop } = createTestLoop({ model, tools: [tool] });
    const stopped = await loop.run({ goal: 'Refund O-1' });
    expect(stopped.stopReason).toBe('needs_human');
    expect(stopped.messages.at(-1)).toEqual({
      role: 'tool',
      toolCallId: 'c1',
      content: '[loopstate: not executed: the run stopped (needs_human) before this call ran]',
    });
    const next = await loop.run({ goal: 'Then just tell me.', messages: stopped.messages });
    expect(next.stopReason).toBe('completed');
    expect(requestAt(model, 1).slice(0, -1)).toEqual(stopped.messages);
  });

  it('refuses bad messages before calling the model, naming the message', async () => {
    const model = scriptedModel([]);
    const { loop } = createTestLoop({ model });
    const badRole = await rejection(() =>
      loop.run({
        goal: 'g',
        messages: [
          { role: 'user', content: 'a' },
          { role: 'user', content: 'b' },
          { role: 'assistant', content: 'c' },
          { role: 'bot', content: 'd' } as unknown as Message,
        ],
      }),
    );
    expect(badRole.issues).toEqual([
      { path: 'messages[3].role', message: 'expected one of "system", "user", "assistant", "tool"' },
    ]);
    const orphan = await rejection(() =>
      loop.run({
        goal: 'g',
        messages: [
          { role: 'user', content: 'a' },
          { role: 'tool', toolCallId: 'c1', content: '{}' },
        ],
      }),
    );
    expect(orphan.issues[0]?.path).toBe('messages[1].toolCallId');
    const noTask = await rejection(() =>
      loop.run({
        messages: [
          { role: 'user', content: 'a' },
          { role: 'assistant', content: 'b' },
        ],
      }),
    );
    expect(noTask.issues[0]).toMatchObject({
      path: 'messages',
      message: expect.stringContaining('must end with a user message') as string,
    });
    const nothing = await rejection(() => loop.run({}));
    expect(nothing.issues).toEqual([
      { path: 'goal', message: 'expected a non-empty goal, or a prior conversation in `messages`' },
    ]);
    expect(model.calls).toHaveLength(0);
  });
});
