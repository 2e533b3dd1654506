/**
 * What `runCli` prints when a command throws and `loopstate/internal` (which formats the message) cannot be imported
 * either: a broken install must still end with a message and the failure exit code, not an unhandled rejection.
 */
import { describe, expect, it, vi } from 'vitest';

vi.mock('./commands/learning.js', () => ({
  learningCommand: () => Promise.reject(new Error('the store is gone')),
}));
vi.mock('../../internal.js', () => {
  throw new Error('Cannot find module loopstate/internal');
});

const { runCli, EXIT_FAILURE } = await import('./run-cli.js');

describe('runCli, when the module formatting a thrown error cannot be imported', () => {
  it('prints the error itself and exits with the failure code', async () => {
    const err: string[] = [];
    const io = { out: () => undefined, err: (text: string) => err.push(text), env: {} };
    await expect(runCli(['learning', 'show'], io)).resolves.toBe(EXIT_FAILURE);
    expect(err).toEqual(['loopstate: the store is gone']);
  });
});
