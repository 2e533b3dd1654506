import { describe, expect, it } from 'vitest';
import { snapshotInput } from './snapshot-input.js';

const copyAll = () => false;

describe('snapshotInput', () => {
  it('drops undefined-valued keys at any depth, for any key name', () => {
    const input = {
      a: undefined,
      b: { c: undefined, d: 1, e: { someFutureLimit: undefined } },
      list: [{ x: undefined, y: 2 }],
    };
    expect(snapshotInput(input, copyAll)).toEqual({ value: { b: { d: 1, e: {} }, list: [{ y: 2 }] }, issues: [] });
  });

  it('keeps undefined array elements, so a missing tool is still reported by index', () => {
    expect(snapshotInput({ tools: [undefined] }, copyAll).value).toEqual({ tools: [undefined] });
  });

  it('keeps class instances, functions and values chosen by the caller by reference', () => {
    class Model {
      id = 'm';
    }
    const model = new Model();
    const clock = { now: () => 1 };
    const onEvent = () => undefined;
    const { value } = snapshotInput({ model, clock, trace: { onEvent } }, (path) => path[0] === 'clock');
    const copied = value as { model: Model; clock: object; trace: { onEvent: () => undefined } };
    expect(copied.model).toBe(model);
    expect(copied.clock).toBe(clock);
    expect(copied.trace.onEvent).toBe(onEvent);
  });

  it('reads each getter once and reports one that throws by its path', () => {
    let reads = 0;
    const input = {
      limits: {
        get maxSteps() {
          reads++;
          return 3;
        },
      },
      list: [
        {
          get bad(): number {
            throw new Error('nope');
          },
        },
      ],
    };
    const { value, issues } = snapshotInput(input, copyAll);
    expect(reads).toBe(1);
    expect(value).toEqual({ limits: { maxSteps: 3 }, list: [{}] });
    expect(issues).toEqual([{ path: 'list[0].bad', message: 'could not be read: nope' }]);
  });

  it('reports a revoked Proxy and a non-Error throw without throwing itself', () => {
    const { proxy, revoke } = Proxy.revocable({}, {});
    revoke();
    const weird = new Proxy(
      {},
      {
        ownKeys: () => {
          throw 42;
        },
      },
    );
    expect(snapshotInput({ proxy, weird }, copyAll).issues).toEqual([
      { path: 'proxy', message: expect.stringMatching(/^could not be read: /) },
      { path: 'weird', message: 'could not be read: 42 was thrown' },
    ]);
  });

  it('stops at runaway nesting', () => {
    let deep: Record<string, unknown> = {};
    const root = deep;
    for (let level = 0; level < 100; level++) deep = (deep.next = {}) as Record<string, unknown>;
    expect(snapshotInput(root, copyAll).issues).toEqual([
      { path: expect.stringMatching(/^next\.next/), message: 'nested more than 64 levels deep' },
    ]);
  });
});
