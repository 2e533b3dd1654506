import { spawn } from 'node:child_process';
import { existsSync, mkdirSync, readdirSync, rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { buildCrashChild, crashChildRoot, removeCrashChild, sweepStaleCrashChildren } from './crash-harness.js';

/** The pid of a process that has exited (spawned here and waited for). */
async function deadPid(): Promise<number> {
  const child = spawn(process.execPath, ['-e', '']);
  await new Promise((resolve) => child.on('close', resolve));
  return child.pid!;
}

function foldersOfThisProcess(): string[] {
  return existsSync(crashChildRoot)
    ? readdirSync(crashChildRoot).filter((name) => name === String(process.pid) || name.startsWith(`${process.pid}-`))
    : [];
}

describe('the crash-child builder cleans up after itself', () => {
  it('removeCrashChild leaves no folder of this build behind (not even an empty one)', async () => {
    const entry = join('fixtures', 'review-child.ts');
    const before = foldersOfThisProcess();
    const script = await buildCrashChild(entry);
    expect(existsSync(script)).toBe(true);
    expect(foldersOfThisProcess().length).toBe(before.length + 1);
    removeCrashChild(entry);
    expect(existsSync(script)).toBe(false);
    expect(foldersOfThisProcess()).toEqual(before);
  });

  it('sweeps what an exited process left (old empty per-pid folders too) and keeps what a running one built', async () => {
    const dead = await deadPid();
    const live = process.ppid;
    mkdirSync(join(crashChildRoot, String(dead)), { recursive: true });
    mkdirSync(join(crashChildRoot, `${dead}-1-crash-child`), { recursive: true });
    writeFileSync(join(crashChildRoot, `${dead}-1-crash-child`, 'crash-child.mjs'), '');
    const liveDir = join(crashChildRoot, `${live}-7-crash-child`);
    mkdirSync(liveDir, { recursive: true });
    try {
      sweepStaleCrashChildren();
      expect(existsSync(join(crashChildRoot, String(dead)))).toBe(false);
      expect(existsSync(join(crashChildRoot, `${dead}-1-crash-child`))).toBe(false);
      expect(existsSync(liveDir)).toBe(true);
    } finally {
      rmSync(liveDir, { recursive: true, force: true });
    }
  });
});
