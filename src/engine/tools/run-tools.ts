/**
 * Runs the ready calls of one tool round: at most `maxParallel` at once, each
 * under its own timeout, results serialised and capped, and a side effect whose outcome is unknown
 * looked up by its idempotency key instead of being run again. Never throws: every call ends as an
 * outcome the model can read.
 */
import { thrownMessage } from '../redaction/describe-thrown.js';
import { AbortFanout, LazySignal, type AbortWaiters } from '../runtime/abort-fanout.js';
import { systemClock } from '../runtime/clock.js';
import { withSignal } from '../runtime/signal-property.js';
import { capBytes } from './cap-bytes.js';
import { idempotencyKey, type OutcomeLookup, type Tool, type ToolContext } from './define-tool.js';
import type { PreparedCall } from './prepare-calls.js';
import { isCallerFault } from './tool-call-error.js';
import type { ToolHealth } from './tool-health.js';
import { UnknownOutcomeError } from './unknown-outcome-error.js';
import {
  toolCancelledAnswer,
  toolFailedAnswer,
  toolNotRunAnswer,
  toolNotRunCancelledAnswer,
  toolTimedOutAnswer,
  unserialisableResultAnswer,
} from '../prompts.js';

/**
 * How one call ended, and exactly what goes back to the model.
 * @example
 * messages.push({ role: 'tool', toolCallId: outcome.callId, content: outcome.content });
 */
export interface ToolCallOutcome {
  callId: string;
  name: string;
  /** `unknown_outcome`: a side-effecting call timed out (or was abandoned on cancel) and whether it took effect cannot be known. */
  status: 'ok' | 'error' | 'timeout' | 'unknown_outcome';
  /** The serialised result or error, cut to `maxResultBytes` with a visible marker. */
  content: string;
  truncated: boolean;
  /** UTF-8 size of the content before it was cut. */
  bytes: number;
  durationMs: number;
  /** The tool blamed its caller (a `ToolCallError` with `blame: 'caller'`): the model's mistake, not the tool's health. */
  callerFault?: true;
}

/**
 * What one round needs from the driver.
 * @example
 * const options: RunToolRoundOptions = { runId, stepId: '3', maxParallel: 4, maxResultBytes: 16_384, signal, health };
 */
export interface RunToolRoundOptions {
  runId: string;
  stepId: string;
  maxParallel: number;
  maxResultBytes: number;
  /** Aborted on cancel or deadline: calls not yet started are skipped, calls in flight are abandoned. */
  signal: AbortSignal;
  /**
   * The run's abort, whose signal `signal` is, shared by its rounds: the round then waits and checks through it
   * and reads `signal` only for a tool that asks for it. Without it, a round makes its own listener on `signal`.
   */
  aborts?: AbortWaiters;
  health: ToolHealth;
  /** Monotonic clock in ms for durations; defaults to `performance.now`. */
  now?: () => number;
  /** Timer for per-call timeouts, returning a cancel function; defaults to `systemClock.setTimer`. The loop passes its clock's. */
  setTimer?: (ms: number, callback: () => void) => () => void;
}

type Settled =
  | { kind: 'returned'; value: unknown }
  | { kind: 'threw'; error: unknown }
  | { kind: 'timed_out' }
  | { kind: 'cancelled' };

/**
 * Runs one round of `ready` calls and returns their outcomes in the same order. Health is recorded per
 * call: `ok` as a success; `error`, `timeout` and `unknown_outcome` as failures. Calls skipped or
 * abandoned because the round was cancelled, and errors a `ToolCallError` blames on the caller, are not
 * the tool's fault and are not recorded.
 * @example
 * const ready = prepareToolCalls(response.toolCalls, { tools, policy, health }).filter((call) => call.status === 'ready');
 * const outcomes = await runToolRound(ready, { runId, stepId, maxParallel: 4, maxResultBytes: 16_384, signal, health });
 */
export async function runToolRound(
  calls: readonly PreparedCall[],
  options: RunToolRoundOptions,
): Promise<ToolCallOutcome[]> {
  const now = options.now ?? (() => performance.now());
  // NaN or a value below one would otherwise run nothing, and the round would silently drop its calls.
  const workers = options.maxParallel >= 1 ? Math.floor(options.maxParallel) : 1;
  // A round given no fanout of the run makes its own, and takes its listener off the signal when it ends:
  // a long-lived signal shared by many rounds must not collect one per round.
  const owned = options.aborts === undefined ? new AbortFanout(options.signal) : null;
  const round: AbortWaiters = owned ?? (options.aborts as AbortWaiters);
  try {
    return await roundOf(calls, workers, round, now, options);
  } finally {
    owned?.dispose();
  }
}

function roundOf(
  calls: readonly PreparedCall[],
  workers: number,
  round: AbortWaiters,
  now: () => number,
  options: RunToolRoundOptions,
): Promise<ToolCallOutcome[]> {
  return mapWithConcurrency(calls, workers, async (call) => {
    const startedAt = now();
    const finish = (status: ToolCallOutcome['status'], text: string): ToolCallOutcome => ({
      callId: call.request.id,
      name: call.request.name,
      status,
      durationMs: Math.max(0, now() - startedAt),
      ...capBytes(text, options.maxResultBytes),
    });
    // The caller should only pass ready calls; a denied or invalid one must still never run.
    if (call.status !== 'ready' || !call.tool) {
      return finish('error', call.error?.message ?? toolNotRunAnswer(call.request.name, call.status));
    }
    if (round.aborted) {
      return finish('error', toolNotRunCancelledAnswer(call.tool.name));
    }
    try {
      const { outcome, health } = await runOneCall(call.tool, call, options, round, finish);
      if (health === 'success') options.health.recordSuccess(outcome.name, outcome.durationMs);
      if (health === 'failure') options.health.recordFailure(outcome.name, outcome.durationMs);
      return outcome;
    } catch (error) {
      // Only our own bookkeeping can get here (execute's errors are settled); still never throw out of a round.
      return finish('error', toolFailedAnswer(call.tool.name, thrownMessage(error)));
    }
  });
}

async function runOneCall(
  tool: Tool,
  call: PreparedCall,
  options: RunToolRoundOptions,
  round: AbortWaiters,
  finish: (status: ToolCallOutcome['status'], text: string) => ToolCallOutcome,
): Promise<{ outcome: ToolCallOutcome; health: 'success' | 'failure' | 'not_recorded' }> {
  const succeeded = (text: string) => ({ outcome: finish('ok', text), health: 'success' as const });
  const failed = (status: 'error' | 'timeout' | 'unknown_outcome', text: string) => ({
    outcome: finish(status, text),
    health: 'failure' as const,
  });
  const key = idempotencyKey(options.runId, options.stepId, call.request.id);
  // The signal is made on first read: most tools never look at it, and an AbortController per call is most of a call's cost.
  const context = (source: SignalSource): ToolContext => {
    // The signal first, as the context's keys always came (one shared getter: see signal-property.ts).
    const own = withSignal({}, source) as { signal: AbortSignal } & Partial<ToolContext>;
    own.idempotencyKey = key;
    own.runId = options.runId;
    own.callId = call.request.id;
    return own as ToolContext;
  };
  const settled = await settleWithin(tool.timeoutMs, round, timerOf(options), (signal) =>
    tool.execute(call.args, context(signal)),
  );
  switch (settled.kind) {
    case 'returned':
      return succeeded(resultText(tool, settled.value));
    case 'threw':
      // A durable run's journal could not tell whether an interrupted earlier attempt took effect: nothing ran now.
      if (settled.error instanceof UnknownOutcomeError)
        return { outcome: finish('unknown_outcome', settled.error.message), health: 'not_recorded' };
      // The caller's fault (a ToolCallError with blame 'caller') is still an error to the model, but not to the breaker.
      if (isCallerFault(settled.error))
        return {
          outcome: { ...finish('error', toolFailedAnswer(tool.name, thrownMessage(settled.error))), callerFault: true },
          health: 'not_recorded',
        };
      return failed('error', toolFailedAnswer(tool.name, thrownMessage(settled.error)));
    case 'cancelled': {
      // Abandoned mid-flight because the run is stopping: not the tool's fault, and no lookup now.
      return tool.idempotent
        ? { outcome: finish('error', toolCancelledAnswer(tool.name, true)), health: 'not_recorded' }
        : { outcome: finish('unknown_outcome', toolCancelledAnswer(tool.name, false)), health: 'not_recorded' };
    }
    case 'timed_out': {
      if (tool.idempotent) return failed('timeout', toolTimedOutAnswer(tool.name, tool.timeoutMs, 'idempotent'));
      const lookup = await lookUpOutcome(tool, call, round, timerOf(options), context);
      if (lookup.status === 'done') return succeeded(resultText(tool, lookup.result));
      if (lookup.status === 'not_done')
        return failed('error', toolTimedOutAnswer(tool.name, tool.timeoutMs, 'not_done'));
      // Never re-execute blindly: the journal resolves it by idempotency key, or a person decides.
      return failed('unknown_outcome', toolTimedOutAnswer(tool.name, tool.timeoutMs, 'unknown'));
    }
  }
}

/** Asks the tool whether a timed-out call took effect; a lookup that fails, hangs or misbehaves means `unknown`. */
async function lookUpOutcome(
  tool: Tool,
  call: PreparedCall,
  round: AbortWaiters,
  setTimer: TimerSource,
  context: (source: SignalSource) => ToolContext,
): Promise<OutcomeLookup> {
  const checkOutcome = tool.checkOutcome;
  if (!checkOutcome) return { status: 'unknown' };
  const settled = await settleWithin(tool.timeoutMs, round, setTimer, (signal) =>
    checkOutcome(call.args, context(signal)),
  );
  if (settled.kind !== 'returned') return { status: 'unknown' };
  const lookup = settled.value as Partial<OutcomeLookup> | null | undefined;
  if (lookup?.status === 'done') return { status: 'done', result: lookup.result };
  return lookup?.status === 'not_done' ? { status: 'not_done' } : { status: 'unknown' };
}

type TimerSource = (ms: number, callback: () => void) => () => void;
/** What a call's context reads its signal from when a tool asks: the call's `LazySignal`. */
type SignalSource = { readonly signal: AbortSignal };

function timerOf(options: RunToolRoundOptions): TimerSource {
  return options.setTimer ?? systemClock.setTimer;
}

/**
 * Runs `work` with a signal that aborts on the timeout or the round's signal, and stops waiting at
 * that moment even if `work` ignores the signal. The signal is only made if `work` reads it.
 */
async function settleWithin(
  timeoutMs: number,
  round: AbortWaiters,
  setTimer: TimerSource,
  work: (source: SignalSource) => unknown,
): Promise<Settled> {
  // An aborted signal never fires 'abort' again, so waiting on it would hang.
  if (round.aborted) return { kind: 'cancelled' };
  let timedOut = false;
  // One signal fed by the round's abort and the timer (AbortSignal.any costs tens of microseconds per call on
  // Node 20 and keeps dependants alive on the long-lived round signal), made only if the tool reads it.
  const callSignal = new LazySignal();
  let stop: ((settled: Settled) => void) | undefined;
  // Settled first by a timeout or the round's abort, before the tool's own abort listeners can settle `work`.
  const stopped = new Promise<Settled>((resolve) => {
    stop = resolve;
  });
  const forgetRoundAbort = round.subscribe((reason) => {
    stop?.({ kind: 'cancelled' });
    callSignal.abort(reason);
  });
  const cancelTimer = setTimer(timeoutMs, () => {
    timedOut = true;
    stop?.({ kind: 'timed_out' });
    callSignal.abort(new DOMException(`timed out after ${timeoutMs} ms`, 'TimeoutError'));
  });
  const isStopped = () => timedOut || round.aborted;
  try {
    let pending: unknown;
    try {
      pending = work(callSignal);
    } catch (error) {
      return isStopped() ? await stopped : { kind: 'threw', error };
    }
    // The timeout or cancel struck while the tool was starting (its own clock moved): as if it came first.
    if (isStopped()) {
      // The abandoned promise may still reject; that must not surface as an unhandled rejection.
      if (isThenable(pending)) Promise.resolve(pending).catch(() => undefined);
      return await stopped;
    }
    // A synchronous tool has finished: no promise race to wait for.
    if (!isThenable(pending)) return { kind: 'returned', value: pending };
    const finished = Promise.resolve(pending).then(
      (value): Settled => ({ kind: 'returned', value }),
      (error: unknown): Settled => ({ kind: 'threw', error }),
    );
    return await Promise.race([finished, stopped]);
  } finally {
    cancelTimer();
    forgetRoundAbort();
  }
}

function isThenable(value: unknown): value is PromiseLike<unknown> {
  return (
    (typeof value === 'object' || typeof value === 'function') &&
    value !== null &&
    typeof (value as PromiseLike<unknown>).then === 'function'
  );
}

/** A call that returned has happened, so a result that cannot be shown is still a success, never an error to retry. */
function resultText(tool: Tool, value: unknown): string {
  const serialised = serialise(value);
  return serialised.ok ? serialised.text : unserialisableResultAnswer(tool.name, serialised.message);
}

function serialise(value: unknown): { ok: true; text: string } | { ok: false; message: string } {
  if (typeof value === 'string') return { ok: true, text: value };
  try {
    // JSON.stringify returns undefined for undefined, functions and symbols; the model sees null.
    // BigInt ids are common in database results and have an exact decimal form.
    const text = JSON.stringify(value, (_key, item: unknown) => (typeof item === 'bigint' ? item.toString() : item));
    return { ok: true, text: text ?? 'null' };
  } catch (error) {
    return { ok: false, message: `its result could not be serialised as JSON: ${thrownMessage(error)}` };
  }
}

/** A minimal worker pool: `limit` workers take the next index until none is left; results keep their order. */
async function mapWithConcurrency<Item, Result>(
  items: readonly Item[],
  limit: number,
  work: (item: Item) => Promise<Result>,
): Promise<Result[]> {
  // The common round is one call: no pool to set up for it.
  if (items.length === 1) return [await work(items[0] as Item)];
  const results = new Array<Result>(items.length);
  let next = 0;
  const worker = async (): Promise<void> => {
    while (next < items.length) {
      const index = next++;
      results[index] = await work(items[index] as Item);
    }
  };
  await Promise.all(Array.from({ length: Math.min(limit, items.length) }, worker));
  return results;
}
