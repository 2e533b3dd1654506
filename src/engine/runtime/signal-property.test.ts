/**
 * `withSignal` gives an object the `signal` an object literal's `get signal()` gave it (own, enumerable, read from
 * its source each time, made only when read), with one getter shared by every such object.
 */
import { describe, expect, it } from 'vitest';
import {
  createLoop,
  defineTool,
  evaluators,
  type Evaluator,
  type Model,
  type ModelRequest,
  type ToolContext,
} from 'loopstate';
import { z } from 'zod';
import { LazySignal } from './abort-fanout.js';
import { withSignal } from './signal-property.js';

describe('withSignal', () => {
  it('is an own, enumerable getter that reads the source each time, and only when read', () => {
    const source = new LazySignal();
    const request = withSignal({ messages: [], tools: [] }, source);
    expect(Object.keys(request)).toEqual(['messages', 'tools', 'signal']);
    const descriptor = Object.getOwnPropertyDescriptor(request, 'signal');
    expect(descriptor?.enumerable).toBe(true);
    expect(descriptor?.configurable).toBe(true);
    expect(typeof descriptor?.get).toBe('function');
    // Not made yet: LazySignal makes its controller on the first read of `signal`.
    source.abort(new Error('stop'));
    expect(request.signal.aborted).toBe(true);
    expect(request.signal.reason).toEqual(new Error('stop'));
    expect(request.signal).toBe(source.signal);
  });

  it("gives each object its own source, through one getter shared by all (no closure per object on V8's maps)", () => {
    const [a, b] = [new LazySignal(), new LazySignal()];
    const first = withSignal({ id: 1 }, a);
    const second = withSignal({ id: 2 }, b);
    b.abort('second');
    expect(first.signal.aborted).toBe(false);
    expect(second.signal.reason).toBe('second');
    expect(Object.getOwnPropertyDescriptor(first, 'signal')?.get).toBe(
      Object.getOwnPropertyDescriptor(second, 'signal')?.get,
    );
  });

  it('is read through a Proxy, an object inheriting from it and a copy of its descriptors, as the literal was', () => {
    const source = new LazySignal();
    const request = withSignal({ messages: [] as string[] }, source);
    const wrapped = new Proxy(request, { get: (target, key, receiver) => Reflect.get(target, key, receiver) });
    const inheriting = Object.create(request) as typeof request;
    const copied = Object.defineProperties({}, Object.getOwnPropertyDescriptors(request)) as typeof request;
    for (const reader of [wrapped, inheriting, copied]) expect(reader.signal).toBe(source.signal);
    // The source is not a key anyone sees.
    expect(Reflect.ownKeys(request).filter((key) => Object.getOwnPropertyDescriptor(request, key)?.enumerable)).toEqual(
      ['messages', 'signal'],
    );
  });

  it('is copied by a spread and JSON as a plain property would be', () => {
    const source = new LazySignal();
    const request = withSignal({ messages: ['hi'] }, source);
    const copy = { ...request };
    expect(copy.signal).toBe(source.signal);
    expect(Object.getOwnPropertyDescriptor(copy, 'signal')?.get).toBeUndefined();
    expect(JSON.parse(JSON.stringify(request))).toEqual({ messages: ['hi'], signal: {} });
  });
});

describe('what a run hands out', () => {
  it('a model request, a tool context and an evaluator input keep their keys, order and signals', async () => {
    const requests: ModelRequest[] = [];
    const contexts: ToolContext[] = [];
    const inputs: unknown[] = [];
    const model: Model = {
      id: 'gpt-4.1-mini',
      async generate(request) {
        requests.push(request);
        if (requests.length === 1)
          return {
            text: null,
            toolCalls: [{ id: 'c1', name: 'lookup', arguments: '{"key":"a"}' }],
            usage: { inputTokens: 1, outputTokens: 1 },
          };
        return { text: '{"ok":true}', toolCalls: [], usage: { inputTokens: 1, outputTokens: 1 } };
      },
    };
    const lookup = defineTool({
      name: 'lookup',
      description: 'Look a key up.',
      input: z.object({ key: z.string() }),
      access: 'read',
      execute: (_args, context) => {
        contexts.push(context);
        return 'found';
      },
    });
    const recorder: Evaluator = {
      name: 'recorder',
      kind: 'rule',
      evaluate: (input) => {
        inputs.push(input);
        return { passed: true, reason: 'recorded', parsed: input.parsed };
      },
    };
    const loop = createLoop({ model, tools: [lookup], evaluate: [evaluators.json(), recorder] });
    const result = await loop.run({ goal: 'go' });
    expect(result.stopReason).toBe('completed');
    expect(Object.keys(requests[0] ?? {})).toEqual(['messages', 'tools', 'signal']);
    expect(Object.keys(contexts[0] ?? {})).toEqual(['signal', 'idempotencyKey', 'runId', 'callId']);
    expect(Object.keys(inputs[0] ?? {})).toEqual(['output', 'parsed', 'taskId', 'signal']);
    // Each is a live signal of its own call (not aborted: the run completed), not undefined.
    expect(requests[0]?.signal).toBeInstanceOf(AbortSignal);
    expect(requests[0]?.signal).not.toBe(requests[1]?.signal);
    // One getter for both requests: a getter of each request's own would keep its call (and run) past a young GC.
    const getter = (request: ModelRequest | undefined) => Object.getOwnPropertyDescriptor(request, 'signal')?.get;
    expect(getter(requests[0])).toBeTypeOf('function');
    expect(getter(requests[0])).toBe(getter(requests[1]));
    expect(contexts[0]?.signal).toBeInstanceOf(AbortSignal);
    expect((inputs[0] as { signal: AbortSignal }).signal).toBeInstanceOf(AbortSignal);
  });
});
