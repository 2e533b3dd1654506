import type { LoopContext, LoopEvent } from '../machines/types.js';

/** The time of the event being handled, or the last observed time for eventless checks. */
export function eventTime(context: LoopContext, event: LoopEvent): number {
  return 'at' in event && event.type !== 'run.started' ? Math.max(event.at, context.lastEventAt) : context.lastEventAt;
}

export interface GuardArgs {
  context: LoopContext;
  event: LoopEvent;
}
