/**
 * The version a DBOS worker stamps its workflows with. DBOS's default is a hash of the application's
 * source, which orphans every pending run on any edit; this one changes only when the statechart, the
 * journal's record format (or the caller's own `version`) changes, so workers of one definition recover
 * each other's runs and never a run they could not read.
 */
import { hash } from 'node:crypto';
import { loopMachine } from '../../../machines/index.js';
import { RECORD_SCHEMA_VERSION } from '../../engine/durable/records.js';

/**
 * Bumped when the run's workflows change how they record steps so that one shape cannot recover the
 * other's (2: successors, waiters). Not bumped when effects stopped being steps: both shapes drain
 * whatever the other recorded.
 */
const RUN_WORKFLOW_SHAPE = 2;

/**
 * The digest behind `machineVersion`: the statechart's config (states, transitions and the names of their
 * guards and actions — `definition` alone leaves guard names out, so a new guarded edge would not show), the
 * record schema version the journal is written with (a worker refuses records newer than its own) and the
 * workflows' shape.
 * @example
 * definitionDigest(loopMachine.config, 4); // '1f0c9a2b7d4e'
 */
export function definitionDigest(machineConfig: unknown, recordSchemaVersion: number): string {
  return hash('sha256', JSON.stringify([RUN_WORKFLOW_SHAPE, recordSchemaVersion, machineConfig]), 'hex').slice(0, 12);
}

/**
 * `loopstate-<digest of the statechart and record format>`, with the caller's version appended when given.
 * @example
 * machineVersion('refunds-3'); // 'loopstate-1f0c9a2b7d4e+refunds-3'
 */
export function machineVersion(version?: string): string {
  const machine = `loopstate-${definitionDigest(loopMachine.config, RECORD_SCHEMA_VERSION)}`;
  return version === undefined ? machine : `${machine}+${version}`;
}
