/**
 * Trace events read off the machine's context around one event: retries (by layer), no-progress
 * nudges and stops. Counter comparisons only, so the cost per event is constant (an argument repair
 * also names the reply's invalid calls).
 */
import type { LoopContext, LoopEvent } from '../../../machines/types.js';
import type { Redactor } from '../redaction/redact.js';
import type { PreparedCall } from '../tools/index.js';
import { tracedArgumentErrors } from './argument-errors.js';
import type { TraceEvent } from '../../contracts/trace-schema.js';

/** Where the events go: the run session, whose `record` redacts them and feeds the sinks. */
interface Recorder {
  record(event: TraceEvent): void;
  /** The calls of the last reply not run yet: an argument repair names the invalid ones. */
  readonly pendingCalls: readonly { call: PreparedCall }[];
  readonly config: { readonly redact: Redactor };
}

/** Records what changed between `before` and `after` that the trace names; `taskId` is the task of `after`. */
export function recordContextChanges(
  trace: Recorder,
  runId: string,
  taskId: string,
  before: LoopContext,
  after: LoopContext,
  event: LoopEvent,
): void {
  const at = event.at;
  const step = after.steps;
  if (after.taskIndex === before.taskIndex) {
    const delayMs = after.retryAt === null ? 0 : Math.max(0, after.retryAt - at);
    // A backoff was scheduled: the counter is the call's own retry number (transport attempts are per call).
    if (after.retryAt !== null && before.retryAt === null) {
      trace.record({
        type: 'retry',
        runId,
        at,
        taskId,
        step,
        layer: 'transport',
        counter: after.transport.consecutiveFailures,
        delayMs,
      });
    }
    if (after.task.reflectionRetries > before.task.reflectionRetries) {
      trace.record({
        type: 'retry',
        runId,
        at,
        taskId,
        step,
        layer: 'reflection',
        counter: after.task.reflectionRetries,
        delayMs,
      });
    }
    if (after.task.argumentRepairs > before.task.argumentRepairs) {
      const argumentErrors = tracedArgumentErrors(trace.pendingCalls, trace.config.redact);
      trace.record({
        type: 'retry',
        runId,
        at,
        taskId,
        step,
        layer: 'argument_repair',
        counter: after.task.argumentRepairs,
        delayMs,
        ...(argumentErrors.length > 0 ? { argumentErrors } : {}),
      });
    }
  }
  if (after.progress.nudgedAtStep !== null && after.progress.nudgedAtStep !== before.progress.nudgedAtStep) {
    const signal = after.progress.lastSignal;
    trace.record({
      type: 'no-progress',
      runId,
      at,
      taskId,
      step,
      signal,
      action: 'nudge',
      detail: `nudged at step ${after.progress.nudgedAtStep}: ${signal ?? 'unknown signal'}`,
    });
  }
  if (after.stop?.reason === 'no_progress' && before.stop === null) {
    trace.record({
      type: 'no-progress',
      runId,
      at,
      taskId,
      step,
      signal: after.progress.lastSignal,
      action: 'stop',
      detail: after.stop.detail,
    });
  }
}
