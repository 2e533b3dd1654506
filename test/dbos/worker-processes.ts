/**
 * What the DBOS tests that run real worker processes share: stopping a worker, reading the side-effect log the
 * workers append to, and waiting for a condition.
 */
import type { ChildProcess } from 'node:child_process';
import { existsSync, readFileSync } from 'node:fs';

/** SIGTERM (a draining shutdown), then SIGKILL if the worker has not exited within 10 s. (One argument: `map(stopWorker)`.) */
export async function stopWorker(child: ChildProcess): Promise<void> {
  if (child.exitCode !== null || child.signalCode !== null) return;
  const exited = new Promise((resolve) => child.on('exit', resolve));
  child.kill('SIGTERM');
  await Promise.race([exited, new Promise((resolve) => setTimeout(resolve, 10_000))]);
  if (child.exitCode === null && child.signalCode === null) child.kill('SIGKILL');
}

/** The lines of a log the workers append to; none before the first is written. */
export const logLines = (log: string): string[] =>
  existsSync(log) ? readFileSync(log, 'utf8').split('\n').filter(Boolean) : [];

/** How many lines of the log start with `prefix`. */
export const countLines = (log: string, prefix: string): number =>
  logLines(log).filter((line) => line.startsWith(prefix)).length;

/** Polls `check` until it holds, or throws naming `what` after `timeoutMs`; resolves with the time it took. */
export async function until(
  check: () => boolean | Promise<boolean>,
  what: string,
  timeoutMs = 60_000,
  pollMs = 20,
): Promise<number> {
  const start = Date.now();
  while (!(await check())) {
    if (Date.now() - start > timeoutMs) throw new Error(`timed out waiting for ${what}`);
    await new Promise((resolve) => setTimeout(resolve, pollMs));
  }
  return Date.now() - start;
}
