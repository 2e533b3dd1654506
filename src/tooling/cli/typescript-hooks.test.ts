import { existsSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { pathToFileURL } from 'node:url';
import { afterAll, describe, expect, it } from 'vitest';
import { readTranspiled, transpiledFile, writeTranspiled } from './transpile-cache.js';
import { initialize, load, resolve } from './typescript-hooks.js';

const directory = mkdtempSync(join(tmpdir(), 'loopstate-ts-hooks-'));
afterAll(() => rmSync(directory, { recursive: true, force: true }));
const typescriptPath = createRequire(import.meta.url).resolve('typescript');

const LOOP = `import type { LoopConfig } from 'loopstate';
import { helper } from './helper.js';
interface Extra { n: number }
enum Level { Low = 1, High = 2 }
const extra: Extra = { n: Level.High };
export const goal: string = helper(extra.n);
export default {} as LoopConfig;
`;

/** Loads `name` (written with `source`) through the hooks' `load`, as Node's hooks thread would. */
async function loaded(name: string, source: string): Promise<string> {
  const file = join(directory, name);
  writeFileSync(file, source);
  const nextLoad = () => Promise.reject(new Error('a TypeScript file is not for the next hook'));
  const result = await load(pathToFileURL(file).href, {}, nextLoad);
  expect(result).toMatchObject({ format: 'module', shortCircuit: true });
  return String(result.source);
}

describe('the TypeScript hooks', () => {
  it('strip types, keep runtime code (enums too), and make no source map unless something reads them', async () => {
    initialize({ typescriptPath, cacheFolder: undefined, sourceMaps: false });
    const output = await loaded('plain.ts', LOOP);
    expect(output).not.toContain('interface');
    expect(output).not.toContain('LoopConfig');
    expect(output).toContain("import { helper } from './helper.js';");
    expect(output).toContain('Level[Level["High"] = 2] = "High"');
    expect(output).not.toContain('sourceMappingURL');

    initialize({ typescriptPath, cacheFolder: undefined, sourceMaps: true });
    const mapped = await loaded('mapped.ts', LOOP);
    expect(mapped).toContain('//# sourceMappingURL=data:application/json;base64,');
    const map = JSON.parse(Buffer.from(mapped.split('base64,')[1] as string, 'base64').toString('utf8')) as {
      sourcesContent: string[];
    };
    expect(map.sourcesContent).toEqual([LOOP]);
  });

  it('keep what they transpiled by the source, and take it for the same source next time', async () => {
    const cacheFolder = join(directory, 'cache');
    initialize({ typescriptPath, cacheFolder, sourceMaps: false });
    const first = await loaded('kept.ts', LOOP);
    const file = transpiledFile({
      folder: cacheFolder,
      typescriptPath,
      fileName: join(directory, 'kept.ts'),
      sourceMaps: false,
      source: LOOP,
    });
    expect(existsSync(file)).toBe(true);
    // What the cache holds is what is loaded (written here by hand, so a transpile could not have made it).
    writeTranspiled(file, 'export const goal = "from the cache";\n');
    expect(await loaded('kept.ts', LOOP)).toBe('export const goal = "from the cache";\n');
    // A changed source is another key: transpiled afresh, the first output again for the first source.
    const changed = await loaded('kept.ts', `${LOOP}export const more = 1;\n`);
    expect(changed).toContain('export const more = 1;');
    expect(readdirSync(join(cacheFolder, 'transpiled'))).toHaveLength(2);
    expect(first).toContain('export const goal = helper(extra.n);');
    // With source maps the output differs, so it is kept apart.
    initialize({ typescriptPath, cacheFolder, sourceMaps: true });
    expect(await loaded('kept.ts', LOOP)).toContain('sourceMappingURL');
    expect(readdirSync(join(cacheFolder, 'transpiled'))).toHaveLength(3);
  });

  it('transpile again, and rewrite, a cache file that was truncated, emptied or is of the older format', async () => {
    const cacheFolder = join(directory, 'damaged-cache');
    initialize({ typescriptPath, cacheFolder, sourceMaps: false });
    const first = await loaded('damaged.ts', LOOP);
    const file = transpiledFile({
      folder: cacheFolder,
      typescriptPath,
      fileName: join(directory, 'damaged.ts'),
      sourceMaps: false,
      source: LOOP,
    });
    const intact = readFileSync(file, 'utf8');
    for (const damaged of [intact.slice(0, intact.length - 20), intact.slice(0, 30), '', first]) {
      writeFileSync(file, damaged);
      expect(readTranspiled(file)).toBeUndefined();
      expect(await loaded('damaged.ts', LOOP)).toBe(first);
      expect(readFileSync(file, 'utf8')).toBe(intact);
    }
  });

  it('leave no partial cache file behind when one cannot be put in place, and pick a partial name no one else has', () => {
    const folder = join(directory, 'unplaced');
    const file = join(folder, 'entry.js');
    mkdirSync(join(file, 'inside'), { recursive: true });
    expect(writeTranspiled(file, 'export {};\n')).toBe(false);
    expect(readdirSync(folder)).toEqual(['entry.js']);
    // A partial file named after this process alone (another thread's, here a folder) does not stand in the way.
    const shared = join(directory, 'shared', 'entry.js');
    mkdirSync(`${shared}.${process.pid}.partial`, { recursive: true });
    expect(writeTranspiled(shared, 'export {};\n')).toBe(true);
  });

  it('transpile where the cache folder cannot be written, and write nothing', async () => {
    writeFileSync(join(directory, 'blocked'), 'a file, not a folder');
    initialize({ typescriptPath, cacheFolder: join(directory, 'blocked'), sourceMaps: false });
    expect(await loaded('blocked.ts', LOOP)).toContain('export const goal = helper(extra.n);');
  });

  it('pass a JavaScript file on, and resolve a .js import of a .ts sibling to the .ts file', async () => {
    initialize({ typescriptPath, cacheFolder: undefined, sourceMaps: false });
    const url = pathToFileURL(join(directory, 'plain.js')).href;
    const next = await load(url, { format: 'module' }, (passed) =>
      Promise.resolve({ format: 'module', source: `passed ${passed}` }),
    );
    expect(next.source).toBe(`passed ${url}`);
    writeFileSync(join(directory, 'helper.ts'), 'export const helper = (n: number) => `n=${n}`;\n');
    const parentURL = pathToFileURL(join(directory, 'plain.ts')).href;
    const attempts: string[] = [];
    const nextResolve = (specifier: string) => {
      attempts.push(specifier);
      if (specifier === './helper.ts')
        return Promise.resolve({ url: pathToFileURL(join(directory, 'helper.ts')).href });
      return Promise.reject(Object.assign(new Error(`not found: ${specifier}`), { code: 'ERR_MODULE_NOT_FOUND' }));
    };
    expect(await resolve('./helper.js', { parentURL }, nextResolve)).toEqual({
      url: pathToFileURL(join(directory, 'helper.ts')).href,
    });
    expect(attempts).toEqual(['./helper.js', './helper.ts']);
    await expect(resolve('missing-package', { parentURL }, nextResolve)).rejects.toThrow('not found: missing-package');
  });
});
