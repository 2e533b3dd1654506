/** What a caller's AbortSignal says about why it was aborted; the reason is the caller's and may misbehave. */
import { summarize } from '../trace/trace-event.js';

/**
 * The cancel detail for an abort `reason`; never throws, even for a reason with throwing getters.
 * @example
 * describeAbortReason(new Error('user closed the tab')) // 'user closed the tab'
 */
export function describeAbortReason(reason: unknown): string {
  try {
    if (reason instanceof Error) return String(reason.message) || reason.name;
    return summarize(reason ?? 'cancelled');
  } catch {
    return 'cancelled (the abort reason could not be read)';
  }
}
