import { afterEach, beforeEach, describe, expect, it, vi } from 'vitest';
import type { ModelCallError } from '../../contracts/errors.js';
import { watchCall, type FetchFunction, type WatchOptions } from './call-watchdog.js';

beforeEach(() => {
  vi.useFakeTimers();
});
afterEach(() => {
  vi.useRealTimers();
});

/** A response whose body the test feeds chunk by chunk; `cancelled` once the reader gave it up. */
function controlledResponse(headers: Record<string, string> = { 'content-type': 'application/json' }): {
  fetch: FetchFunction;
  push: (text: string) => void;
  readonly cancelled: boolean;
} {
  let controller!: ReadableStreamDefaultController<Uint8Array>;
  let cancelled = false;
  const body = new ReadableStream<Uint8Array>({
    start: (c) => void (controller = c),
    cancel: () => void (cancelled = true),
  });
  return {
    fetch: async () => new Response(body, { status: 200, headers }),
    push: (text) => controller.enqueue(new TextEncoder().encode(text)),
    get cancelled() {
      return cancelled;
    },
  };
}

const reasonOf = (signal: AbortSignal) => signal.reason as ModelCallError;

/** A watchdog with a roomy size limit unless the test sets one. */
const watch = (options: Omit<WatchOptions, 'maxResponseBytes' | 'where'> & Partial<WatchOptions>) =>
  watchCall({ maxResponseBytes: 1_000_000, where: 'test-model at http://x/v1', ...options });

describe('watchCall', () => {
  it('aborts after idleTimeoutMs of silence once the headers came, re-armed by every chunk', async () => {
    const server = controlledResponse();
    const watchdog = watch({
      signal: new AbortController().signal,
      timeoutMs: 10_000,
      idleTimeoutMs: 100,
      fetch: server.fetch,
    });
    const response = await watchdog.fetch('http://x');
    const reader = response.body!.getReader();
    for (let index = 0; index < 5; index++) {
      await vi.advanceTimersByTimeAsync(80);
      server.push('x');
      await reader.read();
    }
    expect(watchdog.signal.aborted).toBe(false);
    await vi.advanceTimersByTimeAsync(100);
    expect(watchdog.signal.aborted).toBe(true);
    expect(reasonOf(watchdog.signal)).toMatchObject({
      kind: 'timeout',
      message: expect.stringContaining('idleTimeoutMs (100 ms)'),
    });
    watchdog.dispose();
  });

  it('aborts the whole call after timeoutMs, even while chunks keep coming', async () => {
    const server = controlledResponse();
    const watchdog = watch({
      signal: new AbortController().signal,
      timeoutMs: 300,
      idleTimeoutMs: 100,
      fetch: server.fetch,
    });
    await watchdog.fetch('http://x');
    for (let index = 0; index < 4; index++) {
      await vi.advanceTimersByTimeAsync(90);
      watchdog.touch();
    }
    expect(reasonOf(watchdog.signal)).toMatchObject({
      kind: 'timeout',
      message: 'the OpenAI call took longer than timeoutMs (300 ms)',
    });
    watchdog.dispose();
  });

  it('never arms the idle timer before the headers: a model may think before it answers', async () => {
    const watchdog = watch({
      signal: new AbortController().signal,
      timeoutMs: 1_000,
      idleTimeoutMs: 10,
      fetch: () => new Promise(() => undefined),
    });
    void watchdog.fetch('http://x');
    await vi.advanceTimersByTimeAsync(999);
    expect(watchdog.signal.aborted).toBe(false);
    watchdog.dispose();
  });

  it("passes the caller's abort reason on, and stops every timer on dispose", async () => {
    const caller = new AbortController();
    const watchdog = watch({
      signal: caller.signal,
      timeoutMs: 50,
      idleTimeoutMs: 10,
      fetch: controlledResponse().fetch,
    });
    await watchdog.fetch('http://x');
    const reason = new Error('cancelled by the user');
    caller.abort(reason);
    expect(watchdog.signal.reason).toBe(reason);
    watchdog.dispose();
    const quiet = watch({
      signal: new AbortController().signal,
      timeoutMs: 50,
      idleTimeoutMs: 10,
      fetch: controlledResponse().fetch,
    });
    await quiet.fetch('http://x');
    quiet.dispose();
    await vi.advanceTimersByTimeAsync(1_000);
    expect(quiet.signal.aborted).toBe(false);
    expect(vi.getTimerCount()).toBe(0);
  });

  it('fails the call once the body passes maxResponseBytes, and reads no further', async () => {
    const server = controlledResponse();
    const watchdog = watch({
      signal: new AbortController().signal,
      timeoutMs: 10_000,
      idleTimeoutMs: 1_000,
      maxResponseBytes: 10,
      fetch: server.fetch,
    });
    const reader = (await watchdog.fetch('http://x')).body!.getReader();
    server.push('0123456789');
    expect(new TextDecoder().decode((await reader.read()).value)).toBe('0123456789');
    server.push('!');
    await expect(reader.read()).rejects.toMatchObject({ kind: 'unknown' });
    expect(reasonOf(watchdog.signal)).toMatchObject({
      kind: 'unknown',
      message: expect.stringContaining(
        'test-model at http://x/v1 sent a reply that is larger than maxResponseBytes (10 bytes)',
      ),
    });
    expect(server.cancelled).toBe(true);
    watchdog.dispose();
  });

  it('refuses a body whose declared length is over maxResponseBytes before reading it', async () => {
    const server = controlledResponse({ 'content-type': 'application/json', 'content-length': '11' });
    const watchdog = watch({
      signal: new AbortController().signal,
      timeoutMs: 10_000,
      idleTimeoutMs: 1_000,
      maxResponseBytes: 10,
      fetch: server.fetch,
    });
    await expect(watchdog.fetch('http://x')).rejects.toMatchObject({
      message: expect.stringContaining(
        'answered with a body of 11 bytes, which is larger than maxResponseBytes (10 bytes)',
      ),
    });
    expect(watchdog.signal.aborted).toBe(true);
    expect(server.cancelled).toBe(true);
    watchdog.dispose();
  });

  it('ends an event stream at its [DONE] line, split across chunks, even if the server sends on', async () => {
    const server = controlledResponse({ 'content-type': 'text/event-stream' });
    const watchdog = watch({
      signal: new AbortController().signal,
      timeoutMs: 10_000,
      idleTimeoutMs: 1_000,
      fetch: server.fetch,
    });
    const reader = (await watchdog.fetch('http://x')).body!.getReader();
    const read: string[] = [];
    for (const piece of ['data: {"a":"data: [DONE]"}\n\n', 'data: [DO', 'NE]\n\n']) {
      server.push(piece);
      read.push(new TextDecoder().decode((await reader.read()).value));
    }
    expect(read.join('')).toBe('data: {"a":"data: [DONE]"}\n\ndata: [DONE]\n\n');
    expect((await reader.read()).done).toBe(true);
    // The pipe cancels the source once the terminated end has errored it: a few turns later.
    await vi.advanceTimersByTimeAsync(1);
    expect(server.cancelled).toBe(true);
    expect(watchdog.signal.aborted).toBe(false);
    watchdog.dispose();
  });

  it("reports the last response's content type once its headers came, through one getter shared by every call", async () => {
    const first = watch({
      signal: new AbortController().signal,
      timeoutMs: 10_000,
      idleTimeoutMs: 1_000,
      fetch: controlledResponse({ 'content-type': 'text/event-stream' }).fetch,
    });
    const second = watch({
      signal: new AbortController().signal,
      timeoutMs: 10_000,
      idleTimeoutMs: 1_000,
      fetch: controlledResponse({}).fetch,
    });
    expect(first.contentType).toBeNull();
    await first.fetch('http://x');
    expect(first.contentType).toBe('text/event-stream');
    expect(second.contentType).toBeNull();
    await second.fetch('http://x');
    // A response without the header reads as the empty type, as before.
    expect(second.contentType).toBe('');
    // No getter of its own per call (a closure over the call on V8's map of the object): one on the prototype.
    expect(Object.getOwnPropertyDescriptor(first, 'contentType')).toBeUndefined();
    const shared = Object.getOwnPropertyDescriptor(Object.getPrototypeOf(first) as object, 'contentType');
    expect(typeof shared?.get).toBe('function');
    expect(Object.getPrototypeOf(second)).toBe(Object.getPrototypeOf(first));
    first.dispose();
    second.dispose();
  });
});
