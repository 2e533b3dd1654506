import { describe, expect, it } from 'vitest';
import { ModelCallError } from '../contracts/errors.js';
import { ScriptExhaustedError } from './script-exhausted-error.js';
import type { Message, ModelRequest } from '../contracts/model.js';
import { emptyReply, modelError, reply, scriptedModel, toolCall } from './index.js';

const request = (
  messages: Message[] = [{ role: 'user', content: 'Where is O-101?' }],
  signal = new AbortController().signal,
): ModelRequest => ({
  messages,
  tools: [],
  signal,
});

describe('scriptedModel', () => {
  it('answers each call with the next step, in order', async () => {
    const model = scriptedModel([
      toolCall('get_order_status', { order_id: 'O-101' }),
      reply('Shipped.', { usage: { inputTokens: 120, outputTokens: 30 } }),
    ]);
    expect(await model.generate(request())).toEqual({
      text: null,
      toolCalls: [{ id: 'call_0_0', name: 'get_order_status', arguments: '{"order_id":"O-101"}' }],
      usage: { inputTokens: 100, outputTokens: 20 },
    });
    expect(await model.generate(request())).toEqual({
      text: 'Shipped.',
      toolCalls: [],
      usage: { inputTokens: 120, outputTokens: 30 },
    });
  });

  it('gives tool calls deterministic ids call_<step>_<index> unless the step sets one', async () => {
    const model = scriptedModel([
      reply('a'),
      toolCall([
        { name: 'x', args: {} },
        { name: 'y', args: {}, id: 'mine' },
        { name: 'z', args: {} },
      ]),
    ]);
    await model.generate(request());
    const response = await model.generate(request());
    expect(response.toolCalls.map((call) => call.id)).toEqual(['call_1_0', 'mine', 'call_1_2']);
  });

  it('returns fresh objects, so a caller mutating a response cannot change the script', async () => {
    const step = toolCall('x', { a: 1 });
    const model = scriptedModel([step, step]);
    const first = await model.generate(request());
    (first.toolCalls as unknown as { name: string }[])[0]!.name = 'mutated';
    first.usage.inputTokens = 0;
    expect(await model.generate(request())).toMatchObject({
      toolCalls: [{ name: 'x', id: 'call_1_0' }],
      usage: { inputTokens: 100 },
    });
  });

  it('records each request with a copy of its messages as they were at call time', async () => {
    const model = scriptedModel([reply('a'), reply('b')]);
    const transcript: Message[] = [{ role: 'user', content: 'hi' }];
    await model.generate(request(transcript));
    transcript.push({ role: 'assistant', content: 'a' }, { role: 'user', content: 'more' });
    await model.generate(request(transcript));
    expect(model.calls).toHaveLength(2);
    expect(model.calls[0]?.messages).toEqual([{ role: 'user', content: 'hi' }]);
    expect(model.calls[1]?.messages).toHaveLength(3);
  });

  it('counts remaining steps', async () => {
    const model = scriptedModel([reply('a'), reply('b')]);
    expect(model.remaining).toBe(2);
    await model.generate(request());
    expect(model.remaining).toBe(1);
    await model.generate(request());
    expect(model.remaining).toBe(0);
  });

  it('throws ScriptExhaustedError naming the call count, the script length and the last message', async () => {
    const model = scriptedModel([reply('a')]);
    await model.generate(request());
    const overrun = model.generate(
      request([
        { role: 'user', content: 'hi' },
        { role: 'tool', toolCallId: 'call_0_0', content: '{"status":"shipped"}' },
      ]),
    );
    await expect(overrun).rejects.toBeInstanceOf(ScriptExhaustedError);
    await expect(model.generate(request([]))).rejects.toThrow(
      'scripted model called 3 times but the script has 1 steps; the last request ended with: (no messages)',
    );
    expect(model.calls).toHaveLength(3);
    expect(model.remaining).toBe(0);
  });

  it('describes the last message in the exhaustion error, cutting long content', async () => {
    const model = scriptedModel([]);
    await expect(
      model.generate(request([{ role: 'tool', toolCallId: 'call_0_0', content: '{"status":"shipped"}' }])),
    ).rejects.toThrow(
      'scripted model called 1 times but the script has 0 steps; the last request ended with: tool result for call_0_0: "{\\"status\\":\\"shipped\\"}"',
    );
    const long = await model
      .generate(request([{ role: 'user', content: 'x'.repeat(500) }]))
      .catch((error: Error) => error.message);
    expect(long).toMatch(/user "x{119}…$/);
    const assistant = await model
      .generate(
        request([{ role: 'assistant', content: null, toolCalls: [{ id: 'c', name: 'lookup', arguments: '{"q":1}' }] }]),
      )
      .catch((error: Error) => error.message);
    expect(assistant).toContain('assistant tool calls "lookup({\\"q\\":1})"');
  });

  it('assertComplete passes when every step was played and lists the unused ones otherwise', async () => {
    const model = scriptedModel([
      reply('first'),
      toolCall('lookup', { q: 1 }),
      modelError({ status: 429 }),
      emptyReply(),
      () => reply('dynamic'),
    ]);
    await model.generate(request());
    expect(() => model.assertComplete()).toThrow(ScriptExhaustedError);
    expect(() => model.assertComplete()).toThrow(
      'scripted model has 4 unused step(s) of 5 (called 1 times):\n' +
        '  step 1: toolCall("lookup({\\"q\\":1})")\n' +
        '  step 2: modelError(rate_limited, HTTP 429)\n' +
        '  step 3: emptyReply()\n' +
        '  step 4: dynamic step (function)',
    );
    const complete = scriptedModel([reply('only')]);
    await complete.generate(request());
    expect(() => complete.assertComplete()).not.toThrow();
  });

  it('throws error steps as ModelCallError with kind, status and retryAfterMs', async () => {
    const model = scriptedModel([
      modelError({ status: 429, retryAfterMs: 50 }),
      modelError({ kind: 'timeout' }),
      modelError({ status: 401 }),
    ]);
    const rateLimited = await model.generate(request()).catch((error: unknown) => error);
    expect(rateLimited).toBeInstanceOf(ModelCallError);
    expect(rateLimited).toMatchObject({
      kind: 'rate_limited',
      status: 429,
      retryAfterMs: 50,
      retryable: true,
      code: 'model_rate_limited',
    });
    expect(await model.generate(request()).catch((error: unknown) => error)).toMatchObject({
      kind: 'timeout',
      status: undefined,
      retryable: true,
    });
    expect(await model.generate(request()).catch((error: unknown) => error)).toMatchObject({
      kind: 'auth',
      retryable: false,
    });
    expect(model.remaining).toBe(0);
  });

  it('plays a function step with the request, sync or async, and lets it throw', async () => {
    const seen: ModelRequest[] = [];
    const model = scriptedModel([
      (incoming) => {
        seen.push(incoming);
        return reply(`saw ${incoming.messages.length} messages`);
      },
      async () => toolCall('x', {}),
      () => {
        throw new Error('dynamic failure');
      },
    ]);
    const first = request();
    expect((await model.generate(first)).text).toBe('saw 1 messages');
    expect(seen[0]).toBe(first);
    expect((await model.generate(request())).toolCalls[0]?.id).toBe('call_1_0');
    await expect(model.generate(request())).rejects.toThrow('dynamic failure');
  });

  it('rejects a function step that returns something other than a step', async () => {
    const model = scriptedModel([(() => undefined) as unknown as () => ReturnType<typeof reply>]);
    await expect(model.generate(request())).rejects.toMatchObject({
      code: 'invalid_script',
      message: expect.stringContaining('step 0 produced undefined'),
    });
  });

  it('refuses an already-aborted request with an AbortError, without consuming a step', async () => {
    const model = scriptedModel([reply('a')]);
    const controller = new AbortController();
    controller.abort();
    const error = await model.generate(request(undefined, controller.signal)).catch((caught: unknown) => caught);
    expect(error).toBeInstanceOf(DOMException);
    expect(error).toMatchObject({ name: 'AbortError' });
    expect(error).not.toBeInstanceOf(ModelCallError);
    expect(model.remaining).toBe(1);
    expect(model.calls).toHaveLength(0);
  });

  it("throws the signal's own reason when it has one", async () => {
    const controller = new AbortController();
    const reason = new Error('deadline reached');
    controller.abort(reason);
    await expect(scriptedModel([reply('a')]).generate(request(undefined, controller.signal))).rejects.toBe(reason);
  });

  it('abandons a pending async step when the signal aborts meanwhile', async () => {
    const controller = new AbortController();
    const never = new Promise<ReturnType<typeof reply>>(() => {});
    const model = scriptedModel([() => never]);
    const pending = model.generate(request(undefined, controller.signal));
    controller.abort(new Error('cancelled'));
    await expect(pending).rejects.toThrow('cancelled');
  });

  it("is identified as 'scripted' unless given an id", () => {
    expect(scriptedModel([]).id).toBe('scripted');
    expect(scriptedModel([], { id: 'gpt-4.1-mini' }).id).toBe('gpt-4.1-mini');
  });

  it('copies the script, so changing the array afterwards has no effect', async () => {
    const steps = [reply('a')];
    const model = scriptedModel(steps);
    steps.push(reply('b'));
    expect(model.remaining).toBe(1);
  });
});
