/**
 * What the trace recorded around a transition, read as evidence: which of two equally short routes
 * through the statechart the machine took, and which per-task counter that route moved.
 */
import type { TraceEvent } from '../../index.js';

type EventOf<Type extends TraceEvent['type']> = Extract<TraceEvent, { type: Type }>;

/** The driver's warning when the machine nudges the model; its step and signal. */
export const NUDGE_WARNING = /^no-progress nudge at step (\d+): (\w+)/;

/** What the trace recorded around one transition, to choose between routes of equal length. */
export function routeHint(transition: EventOf<'transition'>, before: TraceEvent | undefined, after: readonly TraceEvent[], stopReason: string | null): string | undefined {
  const nudged = after.some((event) => event.type === 'warning' && NUDGE_WARNING.test(event.message));
  switch (transition.event) {
    case 'model.responded':
      if (transition.to !== 'RUNNING.deciding' || before?.type !== 'step-end') return undefined;
      if (nudged) return 'RUNNING.decisionSignalled';
      return before.decision === 'tool_calls' ? 'RUNNING.repairingArguments' : undefined;
    case 'tools.completed':
      return nudged ? 'RUNNING.roundSignalled' : undefined;
    case 'evaluation.completed':
      if (before?.type === 'evaluation-end' && before.passed) return 'SUCCESS';
      return transition.to === 'TERMINATED' && stopReason === 'retries_exhausted' ? 'FAILED' : undefined;
    default:
      return transition.to === 'TERMINATED' && stopReason === 'retries_exhausted' ? 'FAILED' : undefined;
  }
}

/** The counters the machine keeps per task, as far as the trace shows them. */
export interface DerivedCounters {
  transportRetries: number;
  reflectionRetries: number;
  argumentRepairs: number;
}

/** Which counter a route's edges say moved. */
export function countersMovedBy(route: readonly string[]): Partial<DerivedCounters> {
  return {
    ...(route.includes('RUNNING.backoffChecked->RETRY.backingOff') ? { transportRetries: 1 } : {}),
    ...(route.includes('RUNNING.routingEvaluation->RETRY.reflecting') ? { reflectionRetries: 1 } : {}),
    ...(route.includes('RUNNING.repairingArguments->RUNNING.gate') ? { argumentRepairs: 1 } : {}),
  };
}

