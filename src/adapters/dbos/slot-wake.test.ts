import { describe, expect, it } from 'vitest';
import { loadDbosInternals } from './load-dbos.js';
import { wakeOnFreedSlot } from './slot-wake.js';

/** DBOS 5.3's queue runner and system database as far as the wake relies on them: polls are recorded. */
function fakeDbos() {
  const log: string[] = [];
  let open = 0;
  let overlapped = false;
  const releases: (() => void)[] = [];
  class Runner {
    isRunning = true;
    failNext = false;
    states = new Map<string, { queue: { name: string; fresh?: boolean } }>();
    async pollQueue(executor: unknown, queue: { name: string; fresh?: boolean }): Promise<boolean> {
      if (this.failNext) {
        this.failNext = false;
        throw new Error('connection lost');
      }
      open += 1;
      if (open > 1) overlapped = true;
      log.push(
        `poll:${queue.name}${queue.fresh ? ':fresh' : ''}:${executor === executorObject ? 'executor' : 'other'}`,
      );
      await new Promise<void>((resolve) => releases.push(resolve));
      open -= 1;
      return false;
    }
  }
  class SystemDatabase {
    trackRunningWorkflow(
      id: string,
      entry: { promise: Promise<unknown>; queueName?: string },
      promise: Promise<unknown>,
    ) {
      log.push(`track:${id}`);
      entry.promise = promise.catch(() => undefined).finally(() => log.push(`released:${id}`));
    }
  }
  const executorObject = { systemDatabase: new SystemDatabase() };
  const runner = new Runner();
  /** Lets every poll started so far finish. */
  const finishPolls = async () => {
    for (let round = 0; round < 20; round++) {
      while (releases.length > 0) releases.shift()!();
      await new Promise((resolve) => setImmediate(resolve));
    }
  };
  return { log, runner, executor: executorObject, finishPolls, overlapped: () => overlapped };
}

/** A workflow of `queueName` that settles when `end` is called. */
function workflow(dbos: ReturnType<typeof fakeDbos>, id: string, queueName?: string) {
  let end!: () => void;
  const promise = new Promise<void>((resolve) => (end = resolve));
  dbos.executor.systemDatabase.trackRunningWorkflow(id, { promise: Promise.resolve(), queueName }, promise);
  return end;
}

describe('wakeOnFreedSlot', () => {
  it('polls the queue as soon as one of its workflows settles, after its slot is released', async () => {
    const dbos = fakeDbos();
    const slots = wakeOnFreedSlot({ name: 'runs' }, dbos);
    expect(slots.active).toBe(true);
    const endLeg = workflow(dbos, 'leg', 'runs');
    const endOther = workflow(dbos, 'other', 'elsewhere');
    const endUnqueued = workflow(dbos, 'waiter');
    endOther();
    endUnqueued();
    await dbos.finishPolls();
    expect(dbos.log.filter((line) => line.startsWith('poll'))).toEqual([]);
    endLeg();
    await dbos.finishPolls();
    expect(dbos.log.slice(-2)).toEqual(['released:leg', 'poll:runs:executor']);
    expect(slots.polls).toBe(1);
  });

  it("polls the runner's current view of the queue (its limits as last read), else the queue it was given", async () => {
    const dbos = fakeDbos();
    const slots = wakeOnFreedSlot({ name: 'runs' }, dbos);
    slots.wake();
    await dbos.finishPolls();
    dbos.runner.states.set('runs', { queue: { name: 'runs', fresh: true } });
    slots.wake();
    await dbos.finishPolls();
    expect(dbos.log).toEqual(['poll:runs:executor', 'poll:runs:fresh:executor']);
  });

  it("never polls the queue twice at once (the dispatcher's polls wait their turn), and coalesces wakes that wait", async () => {
    const dbos = fakeDbos();
    const slots = wakeOnFreedSlot({ name: 'runs' }, dbos);
    const queue = { name: 'runs' };
    const scheduled = dbos.runner.pollQueue(dbos.executor, queue);
    for (let index = 0; index < 5; index++) slots.wake();
    const again = dbos.runner.pollQueue(dbos.executor, queue);
    await dbos.finishPolls();
    await Promise.all([scheduled, again]);
    expect(dbos.overlapped()).toBe(false);
    // The dispatcher's poll, one wake for the five, the dispatcher's next poll.
    expect(dbos.log).toEqual(['poll:runs:executor', 'poll:runs:executor', 'poll:runs:executor']);
    expect(slots.polls).toBe(1);
    // Other queues' polls are not held up.
    const [other] = [dbos.runner.pollQueue(dbos.executor, { name: 'other' })];
    await dbos.finishPolls();
    await other;
    expect(dbos.log.at(-1)).toBe('poll:other:executor');
  });

  it('starts no poll once the dispatcher stopped (a draining worker takes no new run), even one waiting its turn', async () => {
    const dbos = fakeDbos();
    const slots = wakeOnFreedSlot({ name: 'runs' }, dbos);
    const scheduled = dbos.runner.pollQueue(dbos.executor, { name: 'runs' });
    slots.wake();
    dbos.runner.isRunning = false;
    slots.wake();
    await dbos.finishPolls();
    await scheduled;
    expect(dbos.log).toEqual(['poll:runs:executor']);
    expect(slots.polls).toBe(0);
  });

  it('reports a failed poll and goes on waking', async () => {
    const dbos = fakeDbos();
    const errors: unknown[] = [];
    const slots = wakeOnFreedSlot({ name: 'runs' }, dbos, (error) => errors.push(error));
    dbos.runner.failNext = true;
    slots.wake();
    await dbos.finishPolls();
    expect(errors.map((error) => (error as Error).message)).toEqual(['connection lost']);
    slots.wake();
    await dbos.finishPolls();
    expect(dbos.log).toEqual(['poll:runs:executor']);
    expect(slots.polls).toBe(2);
  });

  it('puts the internals back as they were on uninstall', async () => {
    const dbos = fakeDbos();
    const before = [dbos.runner.pollQueue, dbos.executor.systemDatabase.trackRunningWorkflow];
    const slots = wakeOnFreedSlot({ name: 'runs' }, dbos);
    expect(dbos.runner.pollQueue).not.toBe(before[0]);
    slots.uninstall();
    expect([dbos.runner.pollQueue, dbos.executor.systemDatabase.trackRunningWorkflow]).toEqual(before);
    expect(Object.prototype.hasOwnProperty.call(dbos.runner, 'pollQueue')).toBe(false);
    workflow(dbos, 'leg', 'runs')();
    await dbos.finishPolls();
    expect(dbos.log.some((line) => line.startsWith('poll'))).toBe(false);
  });

  it('installs nothing when an internal it relies on is missing or not what it expects: the queue is polled as before', () => {
    const dbos = fakeDbos();
    for (const internals of [
      { runner: null, executor: dbos.executor },
      { runner: dbos.runner, executor: null },
      { runner: { pollQueue: () => Promise.resolve(false) }, executor: dbos.executor },
      { runner: dbos.runner, executor: { systemDatabase: {} } },
    ]) {
      const slots = wakeOnFreedSlot({ name: 'runs' }, internals);
      expect(slots.active).toBe(false);
      slots.wake();
      slots.uninstall();
    }
    expect(Object.prototype.hasOwnProperty.call(dbos.runner, 'pollQueue')).toBe(false);
    expect(Object.prototype.hasOwnProperty.call(dbos.executor.systemDatabase, 'trackRunningWorkflow')).toBe(false);
  });

  it('finds the internals it relies on in the installed DBOS (5.3), the executor once launched', () => {
    const { runner, executor } = loadDbosInternals();
    const shape = runner as { pollQueue?: unknown; states?: unknown; isRunning?: unknown };
    expect(typeof shape.pollQueue).toBe('function');
    expect(shape.states).toBeInstanceOf(Map);
    expect(shape.isRunning).toBe(false);
    // Not launched in this process: no executor yet, so a wake would install nothing.
    expect(executor).toBeNull();
  });
});
