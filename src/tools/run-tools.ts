/**
 * Runs the ready calls of one tool round (DESIGN §2, §4, §7, §10): at most `maxParallel` at once, each
 * under its own timeout, results serialised and capped, and a side effect whose outcome is unknown
 * looked up by its idempotency key instead of being run again. Never throws: every call ends as an
 * outcome the model can read.
 */
import { TRUNCATION_MARKER } from '../constants.js';
import type { OutcomeLookup, Tool, ToolContext } from './define-tool.js';
import type { PreparedCall } from './prepare-calls.js';
import type { ToolHealth } from './tool-health.js';

/**
 * How one call ended, and exactly what goes back to the model.
 * @example
 * messages.push({ role: 'tool', toolCallId: outcome.callId, content: outcome.content });
 */
export interface ToolCallOutcome {
  callId: string;
  name: string;
  /** `unknown_outcome`: a side-effecting call timed out and whether it took effect cannot be known. */
  status: 'ok' | 'error' | 'timeout' | 'unknown_outcome';
  /** The serialised result or error, cut to `maxResultBytes` with a visible marker. */
  content: string;
  truncated: boolean;
  /** UTF-8 size of the content before it was cut. */
  bytes: number;
  durationMs: number;
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
  health: ToolHealth;
  /** Monotonic clock in ms for durations; defaults to `performance.now`. */
  now?: () => number;
}

type Settled =
  | { kind: 'returned'; value: unknown }
  | { kind: 'threw'; error: unknown }
  | { kind: 'timed_out' }
  | { kind: 'cancelled' };

/**
 * Runs one round of `ready` calls and returns their outcomes in the same order. Health is recorded per
 * call: `ok` as a success; `error`, `timeout` and `unknown_outcome` as failures. Calls skipped or
 * abandoned because the round was cancelled are not the tool's fault and are not recorded.
 * @example
 * const ready = prepareToolCalls(response.toolCalls, { tools, policy, health }).filter((call) => call.status === 'ready');
 * const outcomes = await runToolRound(ready, { runId, stepId, maxParallel: 4, maxResultBytes: 16_384, signal, health });
 */
export async function runToolRound(calls: readonly PreparedCall[], options: RunToolRoundOptions): Promise<ToolCallOutcome[]> {
  const now = options.now ?? (() => performance.now());
  // NaN or a value below one would otherwise run nothing, and the round would silently drop its calls.
  const workers = options.maxParallel >= 1 ? Math.floor(options.maxParallel) : 1;
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
      return finish('error', call.error?.message ?? `Tool ${call.request.name} was not run: its call is ${call.status}.`);
    }
    if (options.signal.aborted) {
      return finish('error', `Tool ${call.tool.name} was not run: the run was cancelled.`);
    }
    try {
      const outcome = await runOneCall(call.tool, call, options, finish);
      if (outcome.status === 'ok') options.health.recordSuccess(outcome.name, outcome.durationMs);
      else if (!options.signal.aborted) options.health.recordFailure(outcome.name, outcome.durationMs);
      return outcome;
    } catch (error) {
      // Only our own bookkeeping can get here (execute's errors are settled); still never throw out of a round.
      return finish('error', `Tool ${call.tool.name} failed: ${describeError(error)}`);
    }
  });
}

async function runOneCall(
  tool: Tool,
  call: PreparedCall,
  options: RunToolRoundOptions,
  finish: (status: ToolCallOutcome['status'], text: string) => ToolCallOutcome,
): Promise<ToolCallOutcome> {
  const context = (signal: AbortSignal): ToolContext => ({
    signal,
    idempotencyKey: `${options.runId}:${options.stepId}:${call.request.id}`,
    runId: options.runId,
    callId: call.request.id,
  });
  const settled = await settleWithin(tool.timeoutMs, options.signal, (signal) => tool.execute(call.args, context(signal)));
  switch (settled.kind) {
    case 'returned': {
      const serialised = serialise(settled.value);
      return serialised.ok ? finish('ok', serialised.text) : finish('error', `Tool ${tool.name} failed: ${serialised.message}`);
    }
    case 'threw':
      return finish('error', `Tool ${tool.name} failed: ${describeError(settled.error)}`);
    case 'cancelled':
      // Abandoned mid-flight: a side effect may have happened, and the run is stopping, so no lookup now.
      return tool.idempotent
        ? finish('error', `Tool ${tool.name} was cancelled before it finished.`)
        : finish('unknown_outcome', `Tool ${tool.name} was cancelled before it finished; whether it took effect is unknown.`);
    case 'timed_out': {
      const timedOut = `Tool ${tool.name} timed out after ${tool.timeoutMs} ms`;
      if (tool.idempotent) return finish('timeout', `${timedOut}.`);
      const lookup = await lookUpOutcome(tool, call, options.signal, context);
      if (lookup.status === 'done') {
        const serialised = serialise(lookup.result);
        if (serialised.ok) return finish('ok', serialised.text);
      }
      if (lookup.status === 'not_done') return finish('error', `${timedOut} and did not take effect.`);
      // Never re-execute blindly: the journal resolves it by idempotency key or a person decides.
      return finish('unknown_outcome', `${timedOut}; whether it took effect is unknown, so it was not retried. Do not call it again with the same arguments.`);
    }
  }
}

/** Asks the tool whether a timed-out call took effect; a lookup that fails, hangs or misbehaves means `unknown`. */
async function lookUpOutcome(
  tool: Tool,
  call: PreparedCall,
  roundSignal: AbortSignal,
  context: (signal: AbortSignal) => ToolContext,
): Promise<OutcomeLookup> {
  const checkOutcome = tool.checkOutcome;
  if (!checkOutcome) return { status: 'unknown' };
  const settled = await settleWithin(tool.timeoutMs, roundSignal, (signal) => checkOutcome(call.args, context(signal)));
  if (settled.kind !== 'returned') return { status: 'unknown' };
  const lookup = settled.value as Partial<OutcomeLookup> | null | undefined;
  if (lookup?.status === 'done' && 'result' in lookup) return { status: 'done', result: lookup.result };
  return lookup?.status === 'not_done' ? { status: 'not_done' } : { status: 'unknown' };
}

/**
 * Runs `work` with a signal that aborts on the timeout or the round's signal, and stops waiting at
 * that moment even if `work` ignores the signal.
 */
async function settleWithin(timeoutMs: number, roundSignal: AbortSignal, work: (signal: AbortSignal) => unknown): Promise<Settled> {
  const timeout = new AbortController();
  const signal = AbortSignal.any([roundSignal, timeout.signal]);
  let onAbort: (() => void) | undefined;
  const aborted = new Promise<Settled>((resolve) => {
    // Registered before `work` starts, so it runs before the tool's own abort listeners settle it.
    onAbort = () => resolve(timeout.signal.aborted ? { kind: 'timed_out' } : { kind: 'cancelled' });
    signal.addEventListener('abort', onAbort, { once: true });
  });
  const timer = setTimeout(() => timeout.abort(new DOMException(`timed out after ${timeoutMs} ms`, 'TimeoutError')), timeoutMs);
  try {
    const finished = Promise.resolve()
      .then(() => work(signal))
      .then(
        (value): Settled => ({ kind: 'returned', value }),
        (error: unknown): Settled => ({ kind: 'threw', error }),
      );
    return await Promise.race([finished, aborted]);
  } finally {
    clearTimeout(timer);
    if (onAbort) signal.removeEventListener('abort', onAbort);
  }
}

function serialise(value: unknown): { ok: true; text: string } | { ok: false; message: string } {
  if (typeof value === 'string') return { ok: true, text: value };
  try {
    // JSON.stringify returns undefined for undefined, functions and symbols; the model sees null.
    return { ok: true, text: JSON.stringify(value) ?? 'null' };
  } catch (error) {
    return { ok: false, message: `its result could not be serialised as JSON: ${describeError(error)}` };
  }
}

function describeError(error: unknown): string {
  if (error instanceof Error) return error.message;
  if (typeof error === 'string') return error;
  const serialised = serialise(error);
  return serialised.ok ? serialised.text : String(error);
}

/**
 * Cuts `text` so that it, with the truncation marker, fits in `maxBytes` of UTF-8 without splitting a
 * character. The marker is kept even when the limit is smaller than the marker itself.
 * @example
 * capBytes('héllo wörld', 40) // { content: 'h\n[loopstate: tool result truncated: kept 1 of 13 bytes]', truncated: true, bytes: 13 }
 */
export function capBytes(text: string, maxBytes: number): { content: string; truncated: boolean; bytes: number } {
  const bytes = Buffer.byteLength(text, 'utf8');
  if (bytes <= maxBytes) return { content: text, truncated: false, bytes };
  const encoded = Buffer.from(text, 'utf8');
  // The marker's length depends on the kept count; sizing it with `bytes` is an upper bound.
  const room = Math.max(0, maxBytes - Buffer.byteLength(TRUNCATION_MARKER(bytes, bytes), 'utf8'));
  let kept = Math.min(room, encoded.length);
  // Back off while the first dropped byte continues a multi-byte character (10xxxxxx).
  while (kept > 0 && ((encoded[kept] ?? 0) & 0b1100_0000) === 0b1000_0000) kept -= 1;
  return { content: encoded.subarray(0, kept).toString('utf8') + TRUNCATION_MARKER(kept, bytes), truncated: true, bytes };
}

/** A minimal worker pool: `limit` workers take the next index until none is left; results keep their order. */
async function mapWithConcurrency<Item, Result>(
  items: readonly Item[],
  limit: number,
  work: (item: Item) => Promise<Result>,
): Promise<Result[]> {
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
