/**
 * The core on Bun and Deno, from their registry packages: the portable loop, bundled into one ES module with no
 * Node built-in in it, run by each binary as a plain script (Deno with no permission granted at all: the core
 * asks the runtime for nothing). Set LOOPSTATE_SKIP_RUNTIMES=1 to skip (offline); a package that cannot be
 * fetched otherwise fails the test.
 */
import { spawnSync } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { bundlePortableLoop, EXPECTED_RESULT, portableResult } from './bundle-portable-loop.js';
import { installRuntimeBinaries, SKIP_RUNTIMES, type RuntimeBinaries } from './runtime-binaries.js';

let directory: string;
let bundle: string;
let binaries: RuntimeBinaries;

function run(command: string, args: string[]): string {
  const ran = spawnSync(command, args, {
    encoding: 'utf8',
    timeout: 60_000,
    env: { PATH: process.env.PATH ?? '', HOME: directory, NO_COLOR: '1' },
  });
  expect(ran.status, `${command} ${args.join(' ')}:\n${ran.stdout}\n${ran.stderr}`).toBe(0);
  return ran.stdout;
}

describe.skipIf(SKIP_RUNTIMES)('the core on other runtimes', () => {
  beforeAll(async () => {
    directory = mkdtempSync(join(tmpdir(), 'loopstate-runtimes-'));
    bundle = await bundlePortableLoop(directory);
    binaries = installRuntimeBinaries();
  }, 360_000);
  afterAll(() => rmSync(directory, { recursive: true, force: true }));

  it('runs the scripted loop on Bun', () => {
    expect(run(binaries.bun, ['--version']).trim()).toBe('1.4.4');
    expect(portableResult(run(binaries.bun, [bundle]))).toEqual(EXPECTED_RESULT);
  });

  it('runs the scripted loop on Deno, with no permission granted', () => {
    expect(run(binaries.deno, ['--version'])).toMatch(/^deno 2\.9\.6 /);
    expect(portableResult(run(binaries.deno, ['run', '--no-prompt', '--no-config', bundle]))).toEqual(EXPECTED_RESULT);
  });

  it('runs the same bundle on Node, to the same result (the bundle is not what differs)', () => {
    expect(portableResult(run(process.execPath, [bundle]))).toEqual(EXPECTED_RESULT);
  });
});
