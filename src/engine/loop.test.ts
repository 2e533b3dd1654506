/**
 * `loop.run`: the run's own promise, handed back as it is (a run in flight holds no async frame of `run`'s own
 * waiting on it), and bad input still a rejection, never a synchronous throw.
 */
import { createHook } from 'node:async_hooks';
import { describe, expect, it } from 'vitest';
import { scriptedModel, reply } from '../testing/index.js';
import { createLoop, loopConfigOf } from './loop.js';
import { driveRun } from './runtime/driver.js';

describe('loop.run', () => {
  it('makes no promise beyond what the driver makes for the run', async () => {
    let promises = 0;
    const hook = createHook({
      init(_id, type) {
        if (type === 'PROMISE') promises++;
      },
    });
    const loop = createLoop({ model: scriptedModel([reply('one'), reply('two'), reply('three')]) });
    const resolved = loopConfigOf(loop);
    if (resolved === undefined) throw new Error('no config');
    await loop.run({ goal: 'warm up' });
    const counted = async (run: () => Promise<{ stopReason: string }>) => {
      promises = 0;
      hook.enable();
      try {
        expect((await run()).stopReason).toBe('completed');
      } finally {
        hook.disable();
      }
      return promises;
    };
    const driver = await counted(() => driveRun(resolved, undefined, { goal: 'go' }));
    const viaLoop = await counted(() => loop.run({ goal: 'go' }));
    expect(driver).toBeGreaterThan(0);
    expect(viaLoop).toBe(driver);
  });

  it('rejects bad input rather than throwing', async () => {
    const loop = createLoop({ model: scriptedModel([]) });
    let returned: Promise<unknown> | undefined;
    expect(() => {
      returned = loop.run({ goal: 42 } as never);
    }).not.toThrow();
    await expect(returned).rejects.toMatchObject({ name: 'LoopConfigError' });
  });
});
