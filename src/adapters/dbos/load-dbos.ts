/**
 * DBOS, loaded on first use through `require` (it is CommonJS): importing loopstate never loads it,
 * and bundlers of programs that never start a worker leave it (and its optional telemetry peers) out.
 */
import { loadPeer } from '../../engine/peer-dependency.js';
import { createRequire } from 'node:module';

export function loadDbos(): unknown {
  return loadPeer(() => createRequire(import.meta.url)('@dbos-inc/dbos-sdk') as unknown, {
    packageName: '@dbos-inc/dbos-sdk',
    installCommand: 'npm install @dbos-inc/dbos-sdk@~5.3 pg',
    feature: 'loopstate/dbos',
  });
}
