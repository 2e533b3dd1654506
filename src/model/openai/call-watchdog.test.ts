import { afterEach, beforeEach, describe, expect, it, vi } from 'vitest';
import type { ModelCallError } from '../../errors.js';
import { watchCall, type FetchFunction } from './call-watchdog.js';

beforeEach(() => {
  vi.useFakeTimers();
});
afterEach(() => {
  vi.useRealTimers();
});

/** A response whose body the test feeds chunk by chunk. */
function controlledResponse(): { fetch: FetchFunction; push: (text: string) => void } {
  let controller!: ReadableStreamDefaultController<Uint8Array>;
  const body = new ReadableStream<Uint8Array>({ start: (c) => void (controller = c) });
  return {
    fetch: async () => new Response(body, { status: 200, headers: { 'content-type': 'application/json' } }),
    push: (text) => controller.enqueue(new TextEncoder().encode(text)),
  };
}

const reasonOf = (signal: AbortSignal) => signal.reason as ModelCallError;

describe('watchCall', () => {
  it('aborts after idleTimeoutMs of silence once the headers came, re-armed by every chunk', async () => {
    const server = controlledResponse();
    const watchdog = watchCall({ signal: new AbortController().signal, timeoutMs: 10_000, idleTimeoutMs: 100, fetch: server.fetch });
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
    expect(reasonOf(watchdog.signal)).toMatchObject({ kind: 'timeout', message: expect.stringContaining('idleTimeoutMs (100 ms)') });
    watchdog.dispose();
  });

  it('aborts the whole call after timeoutMs, even while chunks keep coming', async () => {
    const server = controlledResponse();
    const watchdog = watchCall({ signal: new AbortController().signal, timeoutMs: 300, idleTimeoutMs: 100, fetch: server.fetch });
    await watchdog.fetch('http://x');
    for (let index = 0; index < 4; index++) {
      await vi.advanceTimersByTimeAsync(90);
      watchdog.touch();
    }
    expect(reasonOf(watchdog.signal)).toMatchObject({ kind: 'timeout', message: 'the OpenAI call took longer than timeoutMs (300 ms)' });
    watchdog.dispose();
  });

  it('never arms the idle timer before the headers: a model may think before it answers', async () => {
    const watchdog = watchCall({ signal: new AbortController().signal, timeoutMs: 1_000, idleTimeoutMs: 10, fetch: () => new Promise(() => undefined) });
    void watchdog.fetch('http://x');
    await vi.advanceTimersByTimeAsync(999);
    expect(watchdog.signal.aborted).toBe(false);
    watchdog.dispose();
  });

  it("passes the caller's abort reason on, and stops every timer on dispose", async () => {
    const caller = new AbortController();
    const watchdog = watchCall({ signal: caller.signal, timeoutMs: 50, idleTimeoutMs: 10, fetch: controlledResponse().fetch });
    await watchdog.fetch('http://x');
    const reason = new Error('cancelled by the user');
    caller.abort(reason);
    expect(watchdog.signal.reason).toBe(reason);
    watchdog.dispose();
    const quiet = watchCall({ signal: new AbortController().signal, timeoutMs: 50, idleTimeoutMs: 10, fetch: controlledResponse().fetch });
    await quiet.fetch('http://x');
    quiet.dispose();
    await vi.advanceTimersByTimeAsync(1_000);
    expect(quiet.signal.aborted).toBe(false);
    expect(vi.getTimerCount()).toBe(0);
  });
});
