/**
 * A freed slot takes the next queued run at once, not at the queue's next poll.
 *
 * DBOS 5.3's dispatcher polls each queue every `minPollingIntervalMs` and has no public way to be woken:
 * a run that ends leaves its slot empty until then, and a run this process enqueues waits for it too.
 * This relies on two internals of `@dbos-inc/dbos-sdk` 5.3, checked when installed: the queue runner's
 * `pollQueue(executor, queue)` (one poll: claim what the limits allow, start it) and the system
 * database's `trackRunningWorkflow(id, entry, promise)`, whose `entry.promise` settles once the
 * workflow's outcome is recorded and its slot released. When a workflow of the queue settles, or
 * `wake()` is called, the queue is polled now. Polls of the queue (the dispatcher's and these) run one
 * at a time, so a poll always counts the slots the one before it filled, and `workerConcurrency` holds.
 * A poll is never started once the dispatcher stopped (a draining worker takes no new run). When either
 * internal is missing (another DBOS version), nothing is installed and the queue is polled as before.
 */

/** The parts of DBOS's internals this relies on (`@dbos-inc/dbos-sdk/internal/wfqueue`, `.../dbos-executor`). */
export interface DbosInternals {
  /** `wfQueueRunner`. */
  runner: unknown;
  /** `DBOSExecutor.globalInstance` (after `DBOS.launch`). */
  executor: unknown;
}

interface QueueRunner {
  isRunning?: unknown;
  states?: unknown;
  pollQueue: (executor: unknown, queue: unknown) => Promise<unknown>;
}

interface RunningEntry {
  promise?: unknown;
  queueName?: unknown;
}

interface SystemDatabase {
  trackRunningWorkflow: (workflowId: unknown, entry: RunningEntry, promise: unknown) => unknown;
}

/**
 * The wake of one queue, installed by `wakeOnFreedSlot`.
 * @example
 * const slots = wakeOnFreedSlot(queue, loadDbosInternals());
 * if (!slots.active) console.warn('a freed slot waits for the next poll');
 */
export interface SlotWake {
  /** False when this DBOS lacks the internals: nothing was installed, the queue is polled as before. */
  readonly active: boolean;
  /** Polls the queue now (coalesced with a poll already waiting its turn). */
  wake(): void;
  /** How many polls wakes have started. */
  readonly polls: number;
  /** Puts DBOS's internals back as they were. */
  uninstall(): void;
}

const inactive: SlotWake = { active: false, wake: () => undefined, polls: 0, uninstall: () => undefined };

function isRunner(value: unknown): value is QueueRunner {
  const runner = value as Partial<QueueRunner> | null;
  return typeof runner?.pollQueue === 'function' && runner.states instanceof Map && 'isRunning' in runner;
}

function systemDatabaseOf(executor: unknown): SystemDatabase | null {
  const database = (executor as { systemDatabase?: Partial<SystemDatabase> } | null | undefined)?.systemDatabase;
  return typeof database?.trackRunningWorkflow === 'function' ? (database as SystemDatabase) : null;
}

/** Replaces `object[key]` and returns how to put it back (an own property restored, an inherited one uncovered). */
function replace<T extends object, K extends keyof T>(object: T, key: K, value: T[K]): () => void {
  const own = Object.prototype.hasOwnProperty.call(object, key);
  const before = object[key];
  object[key] = value;
  return () => {
    if (object[key] !== value) return;
    if (own) object[key] = before;
    else delete object[key];
  };
}

/**
 * Polls `queue` whenever one of its workflows settles in this process, and on `wake()`.
 * `onError` hears a wake's failed poll (DBOS's own poll swallows database errors; the next poll retries).
 * @example
 * const slots = wakeOnFreedSlot(queue, loadDbosInternals());
 * await DBOS.startWorkflow(work, { queueName: queue.name })(input);
 * slots.wake(); // this process enqueued: start it now if a slot is free
 */
export function wakeOnFreedSlot(
  queue: { readonly name: string },
  internals: DbosInternals,
  onError: (error: unknown) => void = () => undefined,
): SlotWake {
  const { runner, executor } = internals;
  const database = systemDatabaseOf(executor);
  if (!isRunner(runner) || database === null) return inactive;
  const poll = runner.pollQueue;
  const track = database.trackRunningWorkflow;
  const current = () => (runner.states as Map<string, { queue?: unknown }>).get(queue.name)?.queue ?? queue;

  // The queue's polls, one after another; a wake waiting its turn takes in the wakes after it.
  let turn: Promise<unknown> = Promise.resolve();
  let waiting = false;
  let polls = 0;
  const serialPoll = (pollExecutor: unknown, polled: unknown): Promise<unknown> => {
    if ((polled as { name?: unknown } | null)?.name !== queue.name) return poll.call(runner, pollExecutor, polled);
    const next = turn.then(() => poll.call(runner, pollExecutor, polled));
    turn = next.catch(() => undefined);
    return next;
  };
  const wake = () => {
    if (waiting || runner.isRunning !== true) return;
    waiting = true;
    const next = turn.then(async () => {
      waiting = false;
      // Stopped while waiting its turn: a draining worker takes no new run.
      if (runner.isRunning !== true) return;
      polls += 1;
      await poll.call(runner, executor, current());
    });
    turn = next.catch(onError);
  };
  const restorePoll = replace(runner, 'pollQueue', serialPoll);
  const restoreTrack = replace(database, 'trackRunningWorkflow', function (this: unknown, workflowId, entry, promise) {
    const tracked = track.call(this, workflowId, entry, promise);
    // `entry.promise` settles after the outcome is recorded and the slot released.
    if (entry?.queueName === queue.name) void Promise.resolve(entry.promise).then(wake, wake);
    return tracked;
  });
  return {
    active: true,
    wake,
    get polls() {
      return polls;
    },
    uninstall: () => {
      restorePoll();
      restoreTrack();
    },
  };
}
