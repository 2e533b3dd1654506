/**
 * The examples `loopstate run <name>` (and `loopstate example <name>`) runs offline. Each is a loop file
 * under examples/ and is imported only when chosen, so `--help` loads no loop; each load builds a fresh
 * config, since a scripted model is used up by one run.
 */
import type { LoopConfig } from '../../index.js';
import type { RunResult } from '../../index.js';

/**
 * One bundled example: what it shows, and a fresh offline config with its goal; or, for an example that is
 * more than one run (stop for approval, then resume), a function that plays the whole story.
 */
export type BundledExample =
  | { description: string; load(): Promise<{ config: LoopConfig; goal: string }> }
  | { description: string; play(log: (line: string) => void): Promise<RunResult> };

export const BUNDLED_EXAMPLES: Readonly<Record<string, BundledExample>> = Object.freeze({
  'order-status': {
    description: 'read-only lookup with an argument pattern; a malformed id is repaired, not_found is never guessed',
    load: async () => {
      const { offlineConfig, goal } = await import('../../../examples/order-status.js');
      return { config: offlineConfig(), goal };
    },
  },
  'weekly-report': {
    description:
      'hybrid workflow classify → draft → format; the draft fails twice (non-JSON) and is retried with feedback',
    load: async () => {
      const { offlineConfig, goal } = await import('../../../examples/weekly-report.js');
      return { config: offlineConfig(), goal };
    },
  },
  'tool-feedback': {
    description:
      'calculator, time service, flaky knowledge base: success rates, circuit breaker, tools ordered by weight',
    load: async () => {
      const { offlineConfig, goal } = await import('../../../examples/tool-feedback.js');
      return { config: offlineConfig(), goal };
    },
  },
  // Stops for approval of a restart, is approved, and resumes from its SQLite store: the result is the resumed run's.
  incident: {
    description:
      '23 distinct diagnostics (one tool, 22 before the restart and one after), a restart stopped for approval, approved and resumed from SQLite',
    play: async (log) => {
      const { runIncidentExample } = await import('../../../examples/incident.js');
      return (await runIncidentExample(log)).resumed;
    },
  },
});

/** What `npm start` and a bare `loopstate example` run. */
export const DEFAULT_EXAMPLE = 'order-status';
