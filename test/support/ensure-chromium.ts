/**
 * The browser test's chromium: Debian's package, never a downloaded browser. On a fresh Debian machine
 * where the suite runs as root (as `.ci/run` does), it is installed with apt, as the Postgres tests install
 * postgresql; anywhere else a missing chromium fails the test with the command to run.
 */
import { spawnSync } from 'node:child_process';
import { existsSync } from 'node:fs';

export const CHROMIUM = '/usr/bin/chromium';

export function ensureChromium(): void {
  if (existsSync(CHROMIUM)) return;
  const isRoot = typeof process.getuid === 'function' && process.getuid() === 0;
  const hasApt = spawnSync('apt-get', ['--version'], { stdio: 'ignore' }).status === 0;
  if (isRoot && hasApt) {
    process.stderr.write(
      "The viewer test needs Debian's chromium: installing it with apt-get (a few minutes, once).\n",
    );
    const env = { ...process.env, DEBIAN_FRONTEND: 'noninteractive' };
    spawnSync('apt-get', ['update'], { stdio: ['ignore', 2, 2], env });
    spawnSync('apt-get', ['install', '-y', 'chromium'], { stdio: ['ignore', 2, 2], env });
  }
  if (!existsSync(CHROMIUM)) {
    throw new Error(
      `The browser test needs Debian's chromium at ${CHROMIUM}, and it is not installed: run \`apt-get install -y chromium\` (as root). No browser is ever downloaded.`,
    );
  }
}
