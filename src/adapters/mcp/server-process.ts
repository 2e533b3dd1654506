/**
 * The child process of a stdio server, held so that it never keeps Node alive and never outlives it:
 * its handle and pipes are unref'd once the connection stands (a call in flight keeps Node alive through
 * its own timers). When Node runs out of work with a server still open (`close()` forgotten), the server
 * is closed as `close()` would (stdin ended, then SIGTERM, then SIGKILL) and waited for, so it is reaped
 * here and never left a zombie; on a hard exit (`process.exit`) it is sent SIGTERM.
 */
import type { ChildProcess } from 'node:child_process';

/** A held server: its process and how to close its connection. */
interface Held {
  child: ChildProcess;
  close: () => Promise<void>;
}

const living = new Set<Held>();
let hooksInstalled = false;

function closeForgotten(): void {
  for (const held of [...living]) {
    living.delete(held);
    // Held again until it has exited, so this process reaps it before it ends.
    held.child.ref();
    held.close().catch(() => {});
  }
}

function killAll(): void {
  for (const { child } of living) {
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
 * and then the connection still works, only without the unref and the exit hooks).
 */
export function childOf(transport: object): ChildProcess | undefined {
  const child = (transport as { _process?: unknown })._process;
  return typeof child === 'object' && child !== null && 'pid' in child ? (child as ChildProcess) : undefined;
}

/**
 * Lets Node exit while the server idles, closes the server when Node is done, and reports its exit.
 * Returns the release to call from `close()`: the process is held again, so Node waits for it to end
 * (and reaps it) while the SDK closes it on unref'd timers.
 * @example
 * const release = holdServerProcess(child, () => client.close(), (exit) => lost(exit));
 */
export function holdServerProcess(
  child: ChildProcess,
  close: () => Promise<void>,
  onExit: (exit: ServerExit) => void,
): () => void {
  if (!hooksInstalled) {
    process.on('beforeExit', closeForgotten);
    process.once('exit', killAll);
    hooksInstalled = true;
  }
  const held: Held = { child, close };
  living.add(held);
  const exited = (code: number | null, signal: NodeJS.Signals | null) => {
    living.delete(held);
    onExit({ code, signal });
  };
  child.once('exit', exited);
  child.unref();
  for (const stream of [child.stdin, child.stdout, child.stderr]) {
    (stream as { unref?: () => void } | null)?.unref?.();
  }
  return () => {
    living.delete(held);
    child.off('exit', exited);
    if (child.exitCode === null && child.signalCode === null) child.ref();
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
