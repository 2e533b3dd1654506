/**
 * A loop reads its `tools` array per run: a list changed in place (as an MCP connection's is on
 * `tools/list_changed`) is validated again and taken by the next run, its secrets included; a run in
 * flight keeps its tools; a durable run waiting for approval sees the changed set as a changed definition.
 */
import { describe, expect, it } from 'vitest';
import { z } from 'zod';
import { createLoop, defineTool, LoopConfigError, memoryStore, type Tool } from 'loopstate';
import { reply, scriptedModel, toolCall } from 'loopstate/testing';

const tool = (name: string, options: { secrets?: string[]; access?: 'read' | 'destructive' } = {}) =>
  defineTool({
    name,
    description: `The ${name} tool`,
    input: z.object({}),
    access: options.access ?? 'read',
    ...(options.secrets ? { secrets: options.secrets } : {}),
    execute: () => `${name} done with ${options.secrets?.[0] ?? 'nothing'}`,
  });

describe('tools read per run', () => {
  it('offers a tool added to the array in place to the next run, and redacts its secrets', async () => {
    const tools: Tool[] = [tool('first')];
    const model = scriptedModel([reply('one'), toolCall('second', {}), reply('two')]);
    const loop = createLoop({ model, tools });
    expect((await loop.run({ goal: 'a' })).stopReason).toBe('completed');
    tools.push(tool('second', { secrets: ['sec_0123456789'] }));
    const second = await loop.run({ goal: 'b' });
    expect(second.stopReason).toBe('completed');
    expect(model.calls[1]!.tools.map((spec) => spec.name)).toEqual(['first', 'second']);
    // Every report is redacted; the transcript keeps what the tool returned (the MCP adapter scrubs its results itself).
    const { messages, ...reported } = second;
    expect(JSON.stringify(reported)).not.toContain('sec_0123456789');
    expect(JSON.stringify(messages)).toContain('second done with sec_0123456789');
  });

  it('traces the next run with the prompt version of its own tools, and sizes requests by them', async () => {
    const tools: Tool[] = [tool('first')];
    const loop = createLoop({ model: scriptedModel([reply('one'), reply('two'), reply('three')]), tools });
    const versionOf = async () => {
      const result = await loop.run({ goal: 'a' });
      const start = result.trace.find((event) => event.type === 'run-start');
      return start?.type === 'run-start' ? start.promptVersion : undefined;
    };
    const before = await versionOf();
    expect(await versionOf()).toBe(before);
    tools.push(tool('second'));
    const after = await versionOf();
    expect(after).toBeDefined();
    expect(after).not.toBe(before);
  });

  it('refuses the next run when the changed list is invalid', async () => {
    const tools: Tool[] = [tool('first')];
    const loop = createLoop({ model: scriptedModel([reply('one')]), tools });
    tools.push(tool('first'));
    await expect(loop.run({ goal: 'a' })).rejects.toThrow(LoopConfigError);
    await expect(loop.run({ goal: 'a' })).rejects.toThrow(/duplicate tool name "first"/);
  });

  it('sees a changed tool set as a changed definition when resuming a waiting run', async () => {
    const tools: Tool[] = [tool('wipe', { access: 'destructive' })];
    const loop = createLoop({
      model: scriptedModel([toolCall('wipe', {}), reply('wiped')]),
      tools,
      store: memoryStore(),
    });
    const stopped = await loop.run({ goal: 'Wipe', runId: 'w1' });
    expect(stopped.status).toBe('needs_human');
    tools.push(tool('extra'));
    await expect(
      loop.resume('w1', { approvals: { [stopped.pendingApprovals[0]!.callId]: { approve: true } } }),
    ).rejects.toMatchObject({ code: 'definition_changed' });
  });
});
