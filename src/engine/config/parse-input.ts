/**
 * The one way config and run input are validated: a safe snapshot first, then the schema, every failure one
 * `LoopConfigError` of the input's scope.
 */
import type { z } from 'zod';
import { LoopConfigError } from '../../contracts/errors.js';
import { thrownMessage } from '../redaction/describe-thrown.js';
import { toConfigIssues } from './config-issues.js';
import { snapshotInput, type KeepByReference } from './snapshot-input.js';

/**
 * Snapshots `input` safely, then validates it: an unreadable field, a schema failure or a check that
 * throws all become one `LoopConfigError` of the given scope.
 */
export function parseInput<Schema extends z.ZodType>(
  schema: Schema,
  input: unknown,
  keep: KeepByReference,
  scope: 'config' | 'run_input',
): z.output<Schema> {
  const snapshot = snapshotInput(input, keep);
  if (snapshot.issues.length > 0) throw new LoopConfigError({ issues: snapshot.issues, scope });
  let parsed: z.ZodSafeParseResult<z.output<Schema>>;
  try {
    parsed = schema.safeParse(snapshot.value);
  } catch (error) {
    // A value whose own getters throw while a check reads them (e.g. a model's `id`).
    throw new LoopConfigError({
      issues: [{ path: '', message: `could not be validated: ${thrownMessage(error)}` }],
      scope,
      cause: error,
    });
  }
  if (!parsed.success)
    throw new LoopConfigError({ issues: toConfigIssues(parsed.error, schema), scope, cause: parsed.error });
  return parsed.data;
}
