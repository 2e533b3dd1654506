/**
 * Requires a CommonJS file through V8's code cache, as Node 22's `module.enableCompileCache()` does and Node 20
 * cannot: the CLI's TypeScript hooks load the `typescript` package (9 MB of JavaScript) in every `loopstate verify`
 * of a `.ts` loop file on Node 20, and compiling it costs more CPU than transpiling the loop. The cache V8 writes
 * after the first transpile holds the functions compiled by then, so the next process compiles neither the package's
 * top level nor its parser and emitter. Plain ESM with no import of the rest of loopstate: it runs on Node's hooks
 * thread.
 */
import { createHash } from 'node:crypto';
import { readFileSync, statSync } from 'node:fs';
import { createRequire } from 'node:module';
import { basename, dirname, join, sep } from 'node:path';
import { Script } from 'node:vm';
import { replaceFile } from './replace-file.js';

/** A module required through the code cache, and how to write the cache once it holds what the process compiled. */
export interface CodeCachedModule {
  /** What the module exported (`module.exports`). */
  exports: unknown;
  /**
   * Whether V8 took the cache file's code (false: there was none, its hash did not match, or V8 refused it, e.g.
   * another Node's).
   */
  cacheUsed: boolean;
  /**
   * Writes the cache file from what V8 has compiled of the module by now, when it was not taken (missing or
   * refused); true when it wrote it. Errors (a read-only folder, a full disk) are swallowed: the cache is an
   * optimisation, never a reason to fail.
   */
  saveCodeCache(): boolean;
}

/**
 * The first bytes of a cache file: a tag, then the SHA-256 of the V8 data after it. V8 release builds do not
 * checksum a code cache, so a damaged file of the right length would be deserialized; a mismatch is a miss.
 */
const CACHE_TAG = Buffer.from('loopstate-v8cache-1\n');
const HASH_LENGTH = 32;

/**
 * The `version` of the nearest `package.json` above `file` (`unversioned` when there is none): npm gives every
 * file of a package the same modification time (1985-10-26), so the version tells two releases apart.
 */
function packageVersionOf(file: string): string {
  for (let folder = dirname(file); ; folder = dirname(folder)) {
    try {
      const { version } = JSON.parse(readFileSync(join(folder, 'package.json'), 'utf8')) as { version?: unknown };
      return typeof version === 'string' ? version : 'unversioned';
    } catch {
      // No (readable) package.json here: look in the folder above.
    }
    if (dirname(folder) === folder) return 'unversioned';
  }
}

/**
 * The cache file for `file` in `folder`: named after the file, its package's version, its size and modification
 * time, Node's version and the architecture, so a changed package or another Node writes a cache of its own instead
 * of refusing one.
 * @example
 * codeCacheFile('/p/node_modules/typescript/lib/typescript.js', '/p/node_modules/.cache/loopstate');
 * // '/p/node_modules/.cache/loopstate/typescript.js-5.6.3-9031246-499162500000-v20.20.2-x64.v8cache'
 */
export function codeCacheFile(file: string, folder: string): string {
  const { size, mtimeMs } = statSync(file);
  const name = [basename(file), packageVersionOf(file), size, Math.trunc(mtimeMs), process.version, process.arch];
  return join(folder, `${name.join('-')}.v8cache`);
}

/** The V8 data in a cache file, or undefined when there is none or its hash does not match (a damaged file). */
function readCodeCache(cacheFile: string): Buffer | undefined {
  let content: Buffer;
  try {
    content = readFileSync(cacheFile);
  } catch {
    return undefined;
  }
  const dataStart = CACHE_TAG.length + HASH_LENGTH;
  if (content.length <= dataStart || !content.subarray(0, CACHE_TAG.length).equals(CACHE_TAG)) return undefined;
  const data = content.subarray(dataStart);
  const hash = createHash('sha256').update(data).digest();
  return hash.equals(content.subarray(CACHE_TAG.length, dataStart)) ? data : undefined;
}

/**
 * The folder for the CLI's caches beside a package: `node_modules/.cache/loopstate` of the `node_modules` the
 * package is installed in (the convention of babel-loader, ESLint and others), or undefined for a file outside one.
 * @example
 * cacheFolderBeside('/p/node_modules/typescript/lib/typescript.js'); // '/p/node_modules/.cache/loopstate'
 */
export function cacheFolderBeside(file: string): string | undefined {
  const marker = `${sep}node_modules${sep}`;
  const at = file.lastIndexOf(marker);
  return at < 0 ? undefined : join(file.slice(0, at + marker.length), '.cache', 'loopstate');
}

/**
 * Requires the CommonJS file `file` (an absolute path) as `require` would, compiled with the V8 code cache in
 * `cacheFile` when there is one V8 accepts; without a `cacheFile` it is a plain `require`.
 * @example
 * const typescript = requireWithCodeCache(path, codeCacheFile(path, folder));
 * typescript.exports.transpileModule(source, options);
 * typescript.saveCodeCache(); // after the first use, so the cache holds what it compiled
 */
export function requireWithCodeCache(file: string, cacheFile: string | undefined): CodeCachedModule {
  const require = createRequire(file);
  if (cacheFile === undefined) return { exports: require(file), cacheUsed: false, saveCodeCache: () => false };
  const cachedData = readCodeCache(cacheFile);
  // CommonJS's own wrapper (Node's `Module.wrap`), so the file sees `exports`, `require`, `module` and its paths.
  const wrapped = `(function (exports, require, module, __filename, __dirname) { ${readFileSync(file, 'utf8')}\n});`;
  const script = new Script(wrapped, {
    filename: file,
    ...(cachedData === undefined ? {} : { cachedData }),
  });
  const module = { exports: {} as unknown, filename: file, id: file, loaded: false };
  (script.runInThisContext() as (...args: unknown[]) => void).call(
    module.exports,
    module.exports,
    require,
    module,
    file,
    dirname(file),
  );
  module.loaded = true;
  const cacheUsed = cachedData !== undefined && script.cachedDataRejected === false;
  let saved = cacheUsed;
  return {
    exports: module.exports,
    cacheUsed,
    saveCodeCache() {
      if (saved) return false;
      saved = true;
      try {
        const data = script.createCachedData();
        // Written aside and renamed, so a process reading it meanwhile sees the old file or the new, never half.
        replaceFile(cacheFile, Buffer.concat([CACHE_TAG, createHash('sha256').update(data).digest(), data]));
        return true;
      } catch {
        return false;
      }
    },
  };
}
