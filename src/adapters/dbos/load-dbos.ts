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

/**
 * DBOS's queue dispatcher, to stop taking new runs while a worker drains (DBOS 5.3 stops it only inside
 * `DBOS.shutdown`, after which nothing in flight can finish). Null when this DBOS does not have it.
 */
export function loadQueueRunner(): { stop(): void } | null {
  try {
    const runner = (
      createRequire(import.meta.url)('@dbos-inc/dbos-sdk/internal/wfqueue') as { wfQueueRunner?: unknown }
    ).wfQueueRunner as { stop?: unknown } | undefined;
    return typeof runner?.stop === 'function' ? (runner as { stop(): void }) : null;
  } catch {
    return null;
  }
}

/**
 * DBOS's queue runner and the launched executor, for `wakeOnFreedSlot` (which checks their shape and
 * does nothing when they are not what it relies on); null parts when this DBOS does not have them.
 */
export function loadDbosInternals(): { runner: unknown; executor: unknown } {
  const internal = (path: string): Record<string, unknown> | null => {
    try {
      return createRequire(import.meta.url)(`@dbos-inc/dbos-sdk/internal/${path}`) as Record<string, unknown>;
    } catch {
      return null;
    }
  };
  const executorClass = internal('dbos-executor')?.DBOSExecutor as { globalInstance?: unknown } | undefined;
  return { runner: internal('wfqueue')?.wfQueueRunner ?? null, executor: executorClass?.globalInstance ?? null };
}
