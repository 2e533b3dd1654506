/**
 * The child process of a stdio server, held so that it never keeps Node alive and never outlives it:
 * its handle and pipes are unref'd once the connection stands (a call in flight keeps Node alive through
 * its own timers), and a process that exits without `close()` takes every server it started with it.
 */
import type { ChildProcess } from 'node:child_process';

const living = new Set<ChildProcess>();
let exitHookInstalled = false;

function killAll(): void {
  for (const child of living) {
    try {
      child.kill('SIGTERM');
    } catch {
      // Already gone.
    }
  }
  living.clear();
}

/** How the server's process ended, for the message of the calls that fail after it. */
export interface ServerExit {
  code: number | null;
  signal: NodeJS.Signals | null;
}

/**
 * The SDK's transport keeps its child in a private field; this reads it (undefined if a later SDK renames it,
 * and then the connection still works, only without the unref and the exit hook).
 */
export function childOf(transport: object): ChildProcess | undefined {
  const child = (transport as { _process?: unknown })._process;
  return typeof child === 'object' && child !== null && 'pid' in child ? (child as ChildProcess) : undefined;
}

/**
 * Lets Node exit while the server idles, kills the server when Node exits, and reports the exit.
 * @example
 * const release = holdServerProcess(child, (exit) => lost(exit));
 */
export function holdServerProcess(child: ChildProcess, onExit: (exit: ServerExit) => void): () => void {
  if (!exitHookInstalled) {
    process.once('exit', killAll);
    exitHookInstalled = true;
  }
  living.add(child);
  const exited = (code: number | null, signal: NodeJS.Signals | null) => {
    living.delete(child);
    onExit({ code, signal });
  };
  child.once('exit', exited);
  child.unref();
  for (const stream of [child.stdin, child.stdout, child.stderr]) {
    (stream as { unref?: () => void } | null)?.unref?.();
  }
  return () => {
    living.delete(child);
    child.off('exit', exited);
  };
}

/**
 * How an exit reads: `exited with code 1`, `was killed by SIGKILL`.
 * @example
 * describeExit({ code: null, signal: 'SIGKILL' }) // 'was killed by SIGKILL'
 */
export function describeExit(exit: ServerExit): string {
  return exit.signal !== null ? `was killed by ${exit.signal}` : `exited with code ${String(exit.code)}`;
}
