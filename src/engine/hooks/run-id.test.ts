import { afterEach, describe, expect, it, vi } from 'vitest';

afterEach(() => {
  vi.restoreAllMocks();
  vi.resetModules();
});

/** A fresh copy of the module, as a second process would load it: any module-level counter starts over. */
async function freshGenerator(): Promise<() => string> {
  vi.resetModules();
  return (await import('./run-id.js')).defaultRunId;
}

describe('defaultRunId', () => {
  it('gives different ids to two processes that start a run in the same millisecond', async () => {
    vi.spyOn(Date, 'now').mockReturnValue(1_750_000_000_000);
    const first = await freshGenerator();
    const second = await freshGenerator();
    const ids = new Set([first(), second(), first(), second()]);
    expect(ids.size).toBe(4);
  });

  it('is the time prefix and eight hex digits of a UUID', async () => {
    const randomUUID = vi
      .spyOn(globalThis.crypto, 'randomUUID')
      .mockReturnValue('9f86d081-884c-4d63-a65a-aaaaaaaaaaaa');
    vi.spyOn(Date, 'now').mockReturnValue(36 ** 3);
    const generate = await freshGenerator();
    expect(generate()).toBe('run_1000_9f86d081');
    expect(randomUUID).toHaveBeenCalledTimes(1);
  });
});
