/**
 * The examples `loopstate run <name>` (and `loopstate example <name>`) runs offline. Each is a loop file
 * under examples/ and is imported only when chosen, so `--help` loads no loop; each load builds a fresh
 * config, since a scripted model is used up by one run.
 */
import type { LoopConfig } from '../config.js';

/** One bundled example: what it shows, and a fresh offline config with its goal. */
export interface BundledExample {
  description: string;
  load(): Promise<{ config: LoopConfig; goal: string }>;
}

export const BUNDLED_EXAMPLES: Readonly<Record<string, BundledExample>> = Object.freeze({
  'order-status': {
    description: 'read-only lookup with an argument pattern; a malformed id is repaired, not_found is never guessed',
    load: async () => {
      const { offlineConfig, goal } = await import('../../examples/order-status.js');
      return { config: offlineConfig(), goal };
    },
  },
  'weekly-report': {
    description: 'hybrid workflow classify → draft → format; the draft fails twice (non-JSON) and is retried with feedback',
    load: async () => {
      const { offlineConfig, goal } = await import('../../examples/weekly-report.js');
      return { config: offlineConfig(), goal };
    },
  },
  'tool-feedback': {
    description: 'calculator, time service, flaky knowledge base: success rates, circuit breaker, tools ordered by weight',
    load: async () => {
      const { offlineConfig, goal } = await import('../../examples/tool-feedback.js');
      return { config: offlineConfig(), goal };
    },
  },
});

/** What `npm start` and a bare `loopstate example` run. */
export const DEFAULT_EXAMPLE = 'order-status';
