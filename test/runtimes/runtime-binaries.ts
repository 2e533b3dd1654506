/**
 * Bun and Deno from their npm registry packages, installed at test time into a cache folder outside the project
 * (once per version; `npm install --prefix`, so the project's own dependencies are untouched). A package that
 * cannot be fetched fails the test saying so; LOOPSTATE_SKIP_RUNTIMES=1 skips the Bun and Deno tests on purpose,
 * for offline work.
 */
import { spawnSync } from 'node:child_process';
import { existsSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

export const BUN_PACKAGE = '@oven/bun-linux-x64@1.4.4';
export const DENO_PACKAGE = '@deno/linux-x64-glibc@2.9.6';

/** Set to 1 to skip the Bun and Deno tests (no registry at hand); anything else, or unset, runs them. */
export const SKIP_RUNTIMES = process.env.LOOPSTATE_SKIP_RUNTIMES === '1';

export interface RuntimeBinaries {
  bun: string;
  deno: string;
}

/** Installs (or finds, installed before) both packages and returns their executables. */
export function installRuntimeBinaries(): RuntimeBinaries {
  const prefix = join(tmpdir(), 'loopstate-runtimes', `${BUN_PACKAGE}_${DENO_PACKAGE}`.replace(/[@/]/g, '-'));
  const binaries = {
    bun: join(prefix, 'node_modules/@oven/bun-linux-x64/bin/bun'),
    deno: join(prefix, 'node_modules/@deno/linux-x64-glibc/deno'),
  };
  if (existsSync(binaries.bun) && existsSync(binaries.deno)) return binaries;
  const npm = process.platform === 'win32' ? 'npm.cmd' : 'npm';
  const installed = spawnSync(
    npm,
    [
      'install',
      '--prefix',
      prefix,
      '--no-save',
      '--no-audit',
      '--no-fund',
      '--no-package-lock',
      BUN_PACKAGE,
      DENO_PACKAGE,
    ],
    { encoding: 'utf8', timeout: 300_000 },
  );
  if (installed.status !== 0 || !existsSync(binaries.bun) || !existsSync(binaries.deno)) {
    throw new Error(
      `could not install ${BUN_PACKAGE} and ${DENO_PACKAGE} from the npm registry into ${prefix} (exit ${String(installed.status)}${installed.error ? `, ${installed.error.message}` : ''}):\n${installed.stderr}\n` +
        'Offline? Set LOOPSTATE_SKIP_RUNTIMES=1 to skip the Bun and Deno tests on purpose.',
    );
  }
  return binaries;
}
