/**
 * The examples `loopstate example <name>` runs offline on the scripted model. Each is imported
 * only when chosen, so `--help` and `--version` load no loop.
 */
import type { RunResult } from '../runtime/run-result.js';

/** Runs one bundled example to its result. */
export type ExampleRunner = () => Promise<RunResult>;

export const BUNDLED_EXAMPLES: Readonly<Record<string, ExampleRunner>> = Object.freeze({
  'order-status': async () => {
    const { createOrderLoop, offlineOrderModel } = await import('../../examples/order-status.js');
    return createOrderLoop(offlineOrderModel()).run({ goal: 'What is the status of order O-101?' });
  },
  'weekly-report': async () => {
    const { createWeeklyReportLoop, offlineWeeklyReportModel } = await import('../../examples/weekly-report.js');
    return createWeeklyReportLoop(offlineWeeklyReportModel()).run({ goal: '生成本周技术周报' });
  },
  // Stops for approval of a restart, is approved, and resumes from its SQLite store: the result is the resumed run's.
  incident: async () => {
    const { runIncidentExample } = await import('../../examples/incident.js');
    return (await runIncidentExample()).resumed;
  },
});

export const DEFAULT_EXAMPLE = 'order-status';
