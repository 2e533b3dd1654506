import { spawnSync } from 'node:child_process';
import {
  mkdirSync,
  mkdtempSync,
  readdirSync,
  readFileSync,
  rmSync,
  statSync,
  utimesSync,
  writeFileSync,
} from 'node:fs';
import { createRequire } from 'node:module';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';
import { afterAll, describe, expect, it } from 'vitest';
import { cacheFolderBeside, codeCacheFile, requireWithCodeCache } from './code-cached-require.js';

const repoRoot = fileURLToPath(new URL('../../..', import.meta.url));

/**
 * Requires `file` through the cache in a Node process of its own (this module run by the repo's test hooks), uses
 * it (`use`, an expression over `exports`), saves the cache, and says what happened.
 */
function requireInChild(
  file: string,
  cacheFile: string,
  use = 'exports.sum([1, 2, 3])',
): { cacheUsed: boolean; saved: boolean; sum: unknown } {
  const script = `
    const { requireWithCodeCache } = await import(${JSON.stringify(pathToFileURL(join(repoRoot, 'src/tooling/cli/code-cached-require.ts')).href)});
    const loaded = requireWithCodeCache(${JSON.stringify(file)}, ${JSON.stringify(cacheFile)});
    const exports = loaded.exports;
    const sum = ${use};
    console.log(JSON.stringify({ cacheUsed: loaded.cacheUsed, saved: loaded.saveCodeCache(), sum }));`;
  const child = spawnSync(
    process.execPath,
    ['--import', join(repoRoot, 'test/support/typescript-register.mjs'), '--input-type=module', '-e', script],
    { encoding: 'utf8' },
  );
  if (child.status !== 0) throw new Error(`the child failed: ${child.stderr}`);
  return JSON.parse(child.stdout) as { cacheUsed: boolean; saved: boolean; sum: unknown };
}

const directory = mkdtempSync(join(tmpdir(), 'loopstate-code-cache-'));
afterAll(() => rmSync(directory, { recursive: true, force: true }));

/** A CommonJS module with a sibling it requires, as a package's file would. */
function commonJsModule(name: string): string {
  const folder = join(directory, name);
  mkdirSync(folder, { recursive: true });
  writeFileSync(join(folder, 'helper.cjs'), 'module.exports = (a, b) => a + b;\n');
  writeFileSync(
    join(folder, 'entry.cjs'),
    "const add = require('./helper.cjs');\nexports.sum = (values) => values.reduce(add, 0);\nexports.where = [__filename, __dirname];\nexports.self = this === module.exports;\n",
  );
  return join(folder, 'entry.cjs');
}

describe('requireWithCodeCache', () => {
  it('requires a CommonJS file as require does: its exports, its own require, __filename, __dirname and this', () => {
    const file = commonJsModule('plain');
    const cached = requireWithCodeCache(file, join(directory, 'plain.v8cache'));
    const exports = cached.exports as { sum: (values: number[]) => number; where: string[]; self: boolean };
    expect(exports.sum([1, 2, 3])).toBe(6);
    expect(exports.where).toEqual([file, join(directory, 'plain')]);
    expect(exports.self).toBe(true);
    const plain = requireWithCodeCache(file, undefined);
    expect((plain.exports as { sum: (values: number[]) => number }).sum([4])).toBe(4);
    expect(plain).toMatchObject({ cacheUsed: false });
    expect(plain.saveCodeCache()).toBe(false);
  });

  it('writes the cache once, the next process takes it, and a cache V8 refuses is written afresh', () => {
    // Each load in a process of its own: within one, V8's own compilation cache answers before the file is read.
    const file = commonJsModule('cached');
    const cacheFile = join(directory, 'cache', 'nested', 'cached.v8cache');
    expect(requireInChild(file, cacheFile)).toEqual({ cacheUsed: false, saved: true, sum: 6 });
    const written = readFileSync(cacheFile);
    expect(written.length).toBeGreaterThan(0);
    expect(requireInChild(file, cacheFile)).toEqual({ cacheUsed: true, saved: false, sum: 6 });
    expect(readFileSync(cacheFile).equals(written)).toBe(true);

    writeFileSync(cacheFile, 'not a code cache');
    expect(requireInChild(file, cacheFile)).toEqual({ cacheUsed: false, saved: true, sum: 6 });
    expect(readFileSync(cacheFile, 'utf8')).not.toBe('not a code cache');
    expect(requireInChild(file, cacheFile)).toEqual({ cacheUsed: true, saved: false, sum: 6 });
  });

  it('takes no cache file whose data does not match its hash (V8 does not checksum it), and writes it afresh', () => {
    const file = commonJsModule('flipped');
    const cacheFile = join(directory, 'flipped.v8cache');
    expect(requireInChild(file, cacheFile)).toEqual({ cacheUsed: false, saved: true, sum: 6 });
    const written = readFileSync(cacheFile);
    const flipped = Buffer.from(written);
    flipped[flipped.length - 1] = (flipped[flipped.length - 1] as number) ^ 0x01;
    writeFileSync(cacheFile, flipped);
    expect(requireInChild(file, cacheFile)).toEqual({ cacheUsed: false, saved: true, sum: 6 });
    expect(readFileSync(cacheFile).equals(flipped)).toBe(false);
    expect(requireInChild(file, cacheFile)).toEqual({ cacheUsed: true, saved: false, sum: 6 });
  });

  it('leaves no partial cache file behind when the cache cannot be put in place', () => {
    const file = commonJsModule('unplaced');
    const folder = join(directory, 'unplaced-cache');
    const cacheFile = join(folder, 'entry.v8cache');
    mkdirSync(join(cacheFile, 'inside'), { recursive: true });
    expect(requireWithCodeCache(file, cacheFile).saveCodeCache()).toBe(false);
    expect(readdirSync(folder)).toEqual(['entry.v8cache']);
  });

  it('loads without a cache where none can be written (a file where the folder should be)', () => {
    const file = commonJsModule('unwritable');
    writeFileSync(join(directory, 'blocked'), 'a file, not a folder');
    const cached = requireWithCodeCache(file, join(directory, 'blocked', 'entry.v8cache'));
    expect((cached.exports as { sum: (values: number[]) => number }).sum([5, 5])).toBe(10);
    expect(cached.cacheUsed).toBe(false);
    expect(cached.saveCodeCache()).toBe(false);
  });

  it('compiles the typescript package through the cache, which the next process takes', () => {
    const typescriptPath = createRequire(import.meta.url).resolve('typescript');
    const cacheFile = codeCacheFile(typescriptPath, join(directory, 'typescript'));
    const transpile = "exports.transpileModule('const a: number = 1;', {}).outputText.trim()";
    expect(requireInChild(typescriptPath, cacheFile, transpile)).toEqual({
      cacheUsed: false,
      saved: true,
      sum: 'var a = 1;',
    });
    expect(requireInChild(typescriptPath, cacheFile, transpile)).toEqual({
      cacheUsed: true,
      saved: false,
      sum: 'var a = 1;',
    });
  });
});

describe('where the cache goes', () => {
  it('is node_modules/.cache/loopstate of the node_modules the package is in, or nowhere outside one', () => {
    expect(cacheFolderBeside('/p/node_modules/typescript/lib/typescript.js')).toBe('/p/node_modules/.cache/loopstate');
    expect(cacheFolderBeside('/p/node_modules/a/node_modules/typescript/lib/typescript.js')).toBe(
      '/p/node_modules/a/node_modules/.cache/loopstate',
    );
    expect(cacheFolderBeside('/p/vendor/typescript.js')).toBeUndefined();
  });

  it("is named after the file's package version, size and time, Node's version and the architecture", () => {
    const file = commonJsModule('named');
    const { size, mtimeMs } = statSync(file);
    expect(codeCacheFile(file, '/c')).toBe(
      `/c/entry.cjs-unversioned-${size}-${Math.trunc(mtimeMs)}-${process.version}-${process.arch}.v8cache`,
    );
    expect(() => codeCacheFile(join(directory, 'missing.cjs'), '/c')).toThrow('ENOENT');
  });

  it('tells two releases of a package apart when npm gave their files the same size and time', () => {
    const release = (version: string) => {
      const folder = join(directory, 'release', version);
      mkdirSync(join(folder, 'lib'), { recursive: true });
      writeFileSync(join(folder, 'package.json'), JSON.stringify({ name: 'pkg', version }));
      const file = join(folder, 'lib', 'index.js');
      writeFileSync(file, 'exports.a = 1;\n');
      // npm's fixed modification time for every file it installs.
      utimesSync(file, new Date('1985-10-26T08:15:00Z'), new Date('1985-10-26T08:15:00Z'));
      return codeCacheFile(file, '/c');
    };
    expect(release('1.0.0')).toContain('index.js-1.0.0-');
    expect(release('1.0.1')).toContain('index.js-1.0.1-');
  });
});
