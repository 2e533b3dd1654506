/**
 * Builds the crash-test child (TypeScript source) into one ES module with vite, which the project
 * already uses through vitest, and spawns it with plain `node`: no build of dist/, no loader flags.
 */
import { spawn } from 'node:child_process';
import { mkdirSync, readdirSync, rmSync } from 'node:fs';
import { basename, dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { threadId } from 'node:worker_threads';
import { bundleForNode } from '../support/bundle-for-node.js';

const here = dirname(fileURLToPath(import.meta.url));
/**
 * Where crash children are built: inside the project, so the bundle's bare imports (zod, xstate, better-sqlite3)
 * resolve from its node_modules. Each build gets its own folder, `<pid>-<thread>-<name>`, removed whole by
 * `removeCrashChild` (vitest runs test files on threads of one process, so the pid alone is shared).
 */
export const crashChildRoot = join(here, '..', '..', 'node_modules', '.cache', 'loopstate-crash-child');

function buildDir(entry: string): string {
  return join(crashChildRoot, `${process.pid}-${threadId}-${childName(entry)}`);
}

function childName(entry: string): string {
  return basename(entry).replace(/\.ts$/, '');
}

/** Builds `entry` (a fixture path relative to this folder) into `<name>.mjs`; returns its path. */
export async function buildCrashChild(entry = join('fixtures', 'crash-child.ts')): Promise<string> {
  sweepStaleCrashChildren();
  const dir = buildDir(entry);
  mkdirSync(dir, { recursive: true });
  return bundleForNode({
    entry: join(here, entry),
    outDir: dir,
    fileName: `${childName(entry)}.mjs`,
    emptyOutDir: true,
  });
}

/** Removes what `buildCrashChild(entry)` built (only that: test files of one process build side by side). */
export function removeCrashChild(entry = join('fixtures', 'crash-child.ts')): void {
  rmSync(buildDir(entry), { recursive: true, force: true });
}

/**
 * Removes the folders a process that no longer runs left behind (one killed before its `afterAll`, or the
 * empty per-pid folders older harnesses left): a folder whose name starts with a pid is removed only when no
 * process has that pid, so nothing a running test file built is touched.
 */
export function sweepStaleCrashChildren(): void {
  let names: string[];
  try {
    names = readdirSync(crashChildRoot);
  } catch {
    return;
  }
  for (const name of names) {
    const pid = /^(\d+)(?:-|$)/.exec(name)?.[1];
    if (pid === undefined || processRuns(Number(pid))) continue;
    rmSync(join(crashChildRoot, name), { recursive: true, force: true });
  }
}

function processRuns(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch (error) {
    // EPERM: it runs, as another user.
    return (error as NodeJS.ErrnoException).code === 'EPERM';
  }
}

export interface ChildOutcome {
  code: number | null;
  signal: NodeJS.Signals | null;
  stdout: string;
  stderr: string;
}

export function runChild(script: string, args: string[], env: Record<string, string> = {}): Promise<ChildOutcome> {
  return new Promise((resolve, reject) => {
    const child = spawn(process.execPath, [script, ...args], {
      env: { ...process.env, ...env },
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    let stdout = '';
    let stderr = '';
    child.stdout.on('data', (chunk: Buffer) => (stdout += chunk.toString()));
    child.stderr.on('data', (chunk: Buffer) => (stderr += chunk.toString()));
    child.on('error', reject);
    child.on('close', (code, signal) => resolve({ code, signal, stdout, stderr }));
  });
}
