import { mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { pathToFileURL } from 'node:url';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { packageVersion } from './package-version.js';

const directoryUrl = (path: string) => pathToFileURL(`${path}/`);

describe('packageVersion', () => {
  let root: string;
  beforeEach(() => {
    root = mkdtempSync(join(tmpdir(), 'loopstate-version-'));
  });
  afterEach(() => {
    rmSync(root, { recursive: true, force: true });
  });

  it("reads this repository's version by default", () => {
    const manifest = JSON.parse(readFileSync(new URL('../../../package.json', import.meta.url), 'utf8')) as {
      version: string;
    };
    expect(packageVersion()).toBe(manifest.version);
  });

  it("walks up past other packages' manifests to loopstate's, as from dist/src/cli/", () => {
    const nested = join(root, 'dist', 'src', 'cli');
    mkdirSync(nested, { recursive: true });
    writeFileSync(join(root, 'package.json'), JSON.stringify({ name: 'loopstate', version: '9.8.7' }));
    writeFileSync(join(root, 'dist', 'package.json'), JSON.stringify({ name: 'something-else', version: '0.0.1' }));
    expect(packageVersion(directoryUrl(nested))).toBe('9.8.7');
  });

  it('fails with a clear message when no loopstate manifest is above', () => {
    const nested = join(root, 'a', 'b');
    mkdirSync(nested, { recursive: true });
    expect(() => packageVersion(directoryUrl(nested))).toThrow(/cannot find the package\.json of loopstate above/);
  });

  it('surfaces a broken manifest instead of skipping it', () => {
    writeFileSync(join(root, 'package.json'), '{ "name": "loopstate", ');
    expect(() => packageVersion(directoryUrl(root))).toThrow(SyntaxError);
  });
});
