/**
 * Builds the crash-test child (TypeScript source) into one ES module with vite, which the project
 * already uses through vitest, and spawns it with plain `node`: no build of dist/, no loader flags.
 */
import { spawn } from 'node:child_process';
import { mkdirSync, rmSync } from 'node:fs';
import { basename, dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { bundleForNode } from '../support/bundle-for-node.js';

const here = dirname(fileURLToPath(import.meta.url));
// Inside the project, so the bundle's bare imports (zod, xstate, better-sqlite3) resolve from its node_modules.
const outDir = join(here, '..', '..', 'node_modules', '.cache', 'loopstate-crash-child', String(process.pid));

/** Builds `entry` (a fixture path relative to this folder) into `<name>.mjs`; returns its path. */
export async function buildCrashChild(entry = join('fixtures', 'crash-child.ts')): Promise<string> {
  const name = basename(entry).replace(/\.ts$/, '');
  const dir = join(outDir, name);
  mkdirSync(dir, { recursive: true });
  return bundleForNode({ entry: join(here, entry), outDir: dir, fileName: `${name}.mjs`, emptyOutDir: true });
}

/** Removes what `buildCrashChild(entry)` built (only that: test files of one process build side by side). */
export function removeCrashChild(entry = join('fixtures', 'crash-child.ts')): void {
  rmSync(join(outDir, basename(entry).replace(/\.ts$/, '')), { recursive: true, force: true });
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
