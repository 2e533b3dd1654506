/**
 * The version a DBOS worker stamps its workflows with. DBOS's default is a hash of the application's
 * source, which orphans every pending run on any edit; this one changes only when the statechart (or
 * the caller's own `version`) changes, so workers of one definition recover each other's runs.
 */
import { hash } from 'node:crypto';
import { loopMachine } from '../../../machines/index.js';

/**
 * Bumped when the run's workflows change how they record steps so that one shape cannot recover the
 * other's (2: successors, waiters). Not bumped when effects stopped being steps: both shapes drain
 * whatever the other recorded, so workers of either recover runs of both during a rolling upgrade.
 */
const RUN_WORKFLOW_SHAPE = 2;

/**
 * `loopstate-<hash of the statechart's definition>`, with the caller's version appended when given.
 * @example
 * machineVersion('refunds-3'); // 'loopstate-1f0c9a2b7d4e+refunds-3'
 */
export function machineVersion(version?: string): string {
  // The workflows' shape too: a worker must not recover a run's workflow another shape recorded.
  const machine = `loopstate-${hash('sha256', JSON.stringify([RUN_WORKFLOW_SHAPE, loopMachine.definition]), 'hex').slice(0, 12)}`;
  return version === undefined ? machine : `${machine}+${version}`;
}
