/**
 * DBOS, loaded on first use through `require` (it is CommonJS): importing loopstate never loads it,
 * and bundlers of programs that never start a worker leave it (and its optional telemetry peers) out.
 */
import { createRequire } from 'node:module';

export function loadDbos(): unknown {
  return createRequire(import.meta.url)('@dbos-inc/dbos-sdk');
}
