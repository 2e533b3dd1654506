/**
 * A durable run's limits are part of the run: recorded when it starts and the ones that apply whenever
 * it is resumed, whatever the resuming loop allows and whether or not a snapshot was written (a snapshot
 * carries the machine's limits, the events after it do not). A resume after a deploy that changed the
 * limits keeps the run's own and says so in a warning; a run waiting for approval is never failed by it.
 */
import { z } from 'zod';
import type { LoopLimits } from '../../../machines/types.js';

/** Every limit by name, whatever limits this version has; `null` is a limit switched off (`Infinity`, which JSON cannot hold). */
export const recordedLimitsSchema = z.record(z.string(), z.number().nullable());

export type RecordedLimits = z.output<typeof recordedLimitsSchema>;

/** Limits by name, whatever limits this version has. */
const byName = (limits: LoopLimits): Record<string, unknown> => limits as unknown as Record<string, unknown>;

/** The limits as they are recorded with the run. */
export function recordLimits(limits: LoopLimits): RecordedLimits {
  return Object.fromEntries(
    Object.entries(byName(limits)).map(([name, value]) => [
      name,
      typeof value === 'number' && Number.isFinite(value) ? value : null,
    ]),
  );
}

/**
 * The run's limits: the recorded ones, and the resuming loop's for a limit the record does not name
 * (one added by a later loopstate, or a run recorded before limits were: all of them).
 */
export function runLimits(recorded: RecordedLimits | undefined, loop: LoopLimits): LoopLimits {
  if (recorded === undefined) return loop;
  const limits = { ...byName(loop) };
  for (const name of Object.keys(limits)) {
    if (!Object.hasOwn(recorded, name)) continue;
    const value = recorded[name];
    // Switched off: Infinity, unless this version switches the limit off with null itself.
    limits[name] = typeof value === 'number' ? value : typeof limits[name] === 'number' ? Infinity : limits[name];
  }
  return limits as unknown as LoopLimits;
}

/** A warning naming every limit of the resuming loop that differs from the run's, or null when none does. */
export function limitsKeptWarning(run: LoopLimits, loop: LoopLimits): string | null {
  const kept = byName(run);
  const offered = byName(loop);
  const differing = Object.keys(offered)
    .filter((name) => kept[name] !== offered[name])
    .map((name) => `${name} ${String(kept[name])} (this loop: ${String(offered[name])})`);
  if (differing.length === 0) return null;
  return `resumed by a loop with other limits; the run keeps the limits it started with: ${differing.join(', ')}`;
}

/**
 * The machine snapshot with the run's limits in its context: a snapshot holds the limits it was taken
 * with, which must not outrank the run's (and a switched-off limit is `null` in it once through JSON).
 */
export function withRunLimits(machine: unknown, limits: LoopLimits): unknown {
  const context = (machine as { context?: unknown } | undefined)?.context;
  if (typeof context !== 'object' || context === null) return machine;
  return { ...(machine as object), context: { ...context, limits: { ...limits } } };
}
