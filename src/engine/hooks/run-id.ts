/** The id of one run: the caller's, or one from `generateRunId`, which is a user hook and may misbehave. */
import { LoopstateError } from '../../contracts/errors.js';
import { thrownMessage } from '../redaction/describe-thrown.js';

/**
 * The run id used when `generateRunId` is not given, or fails: a time prefix (ids sort by start) and
 * random hex from a UUID, so runs of several processes sharing one store never collide, as a
 * per-process counter would.
 * @example
 * defaultRunId() // 'run_m1x2y3z4_9f86d081'
 */
export const defaultRunId = (): string =>
  `run_${Date.now().toString(36)}_${globalThis.crypto.randomUUID().slice(0, 8)}`;

/**
 * The run id, and the fault to end the run with when `generate` threw or returned no usable id (the
 * run then carries `fallbackId`, so its result and trace still have one).
 * @example
 * const { runId, fault } = resolveRunId(input.runId, config.generateRunId, () => 'run_fallback');
 */
export function resolveRunId(
  given: string | undefined,
  generate: () => string,
  fallbackId: () => string,
): { runId: string; fault: Error | null } {
  if (given !== undefined) return { runId: given, fault: null };
  let generated: unknown;
  try {
    generated = generate();
  } catch (error) {
    return {
      runId: fallbackId(),
      fault: new LoopstateError({
        code: 'invalid_run_id',
        message: `generateRunId threw: ${thrownMessage(error)}`,
        cause: error,
      }),
    };
  }
  if (typeof generated === 'string' && generated.trim() !== '') return { runId: generated, fault: null };
  const got = typeof generated === 'string' ? 'an empty string' : generated === null ? 'null' : typeof generated;
  return {
    runId: fallbackId(),
    fault: new LoopstateError({
      code: 'invalid_run_id',
      message: `generateRunId returned ${got}; expected a non-empty string`,
    }),
  };
}
