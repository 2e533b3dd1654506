/**
 * The `inspect` option: any XState inspection observer, handed to the loop's actor. An observer that
 * throws is the caller's bug, never the run's: each call is guarded and the first failure becomes a warning.
 */
import type { InspectionEvent, Observer } from 'xstate';
import { thrownMessage } from '../redaction/describe-thrown.js';

/**
 * What `createLoop({ inspect })` accepts: an observer object (e.g. `statelyInspector({ url })`) or a
 * plain function, exactly as XState's own `createActor(machine, { inspect })` takes.
 * @example
 * const events: string[] = [];
 * createLoop({ model, inspect: (event) => events.push(event.type) });
 */
export type InspectOption = Observer<InspectionEvent> | ((inspectionEvent: InspectionEvent) => void);

/** True for what XState accepts as an inspection observer; the config schema checks with it. */
export function isInspectOption(value: unknown): value is InspectOption {
  if (typeof value === 'function') return true;
  if (typeof value !== 'object' || value === null) return false;
  const observer = value as Record<string, unknown>;
  const methods = ['next', 'error', 'complete'].map((name) => observer[name]);
  return (
    methods.some((method) => typeof method === 'function') &&
    methods.every((method) => method === undefined || typeof method === 'function')
  );
}

/**
 * Wraps `option` so no throw reaches the actor: `onFirstFailure` hears about the first one with its
 * message, and later events are still delivered (a flaky observer may recover).
 * @example
 * createActor(loopMachine, { input, inspect: guardedInspector(inspect, (message) => warn(message)) });
 */
export function guardedInspector(
  option: InspectOption,
  onFirstFailure: (message: string) => void,
): Observer<InspectionEvent> {
  let failed = false;
  const guard = (call: () => void) => {
    try {
      call();
    } catch (error) {
      if (failed) return;
      failed = true;
      try {
        onFirstFailure(`the inspect observer threw, and the run went on without it: ${thrownMessage(error)}`);
      } catch {
        // A warning sink that throws too: the run still must not see it.
      }
    }
  };
  if (typeof option === 'function') return { next: (event) => guard(() => option(event)) };
  return {
    next: (event) => guard(() => option.next?.(event)),
    error: (error) => guard(() => option.error?.(error)),
    complete: () => guard(() => option.complete?.()),
  };
}
