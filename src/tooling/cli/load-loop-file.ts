/**
 * Loads a loop file for the CLI (`loopstate run`, `loopstate verify`): a module whose default export is a
 * `createLoop` result or a loop config, and which exports `goal` (a string) for `run`. `.js`/`.mjs` files
 * are imported as they are; `.ts`/`.mts` files run without a build step: natively where Node strips types
 * (22.6+), else transpiled on import (types removed, not checked) by our module hooks with the `typescript`
 * package found next to the loop file or beside loopstate, else through Vite's module runner when vite is
 * installed.
 */
import { existsSync, readFileSync, statSync } from 'node:fs';
import { createRequire, register } from 'node:module';
import { dirname, extname, join, resolve as resolvePath } from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';
import type { LoopConfig } from '../../index.js';
import type { Loop } from '../../index.js';
import { thrownMessage } from '../../internal.js';
import { CliError } from './cli-error.js';
import { cacheFolderBeside } from './code-cached-require.js';
import type { TypeScriptHooksData } from './typescript-hooks.js';

/**
 * A loop file that cannot be loaded: missing, not a module the CLI can import, or without a loop
 * (exit code 3 in `loopstate run`).
 * @example
 * try { await loadLoopFile('loop.ts') } catch (error) { if (error instanceof LoopFileError) console.error(error.message) }
 */
export class LoopFileError extends CliError {
  readonly path: string;
  constructor({ path, message, cause }: { path: string; message: string; cause?: unknown }) {
    super({ kind: 'loop_file', message, cause });
    this.path = path;
  }
}

/** A loaded loop file: the config to build the loop from, the loop itself when one was exported, and its goal. */
export interface LoadedLoop {
  /** The config: the exported one, or the exported loop's own (`loop.config`). */
  config: LoopConfig;
  /** The exported `createLoop` result; undefined when the file exported a config. */
  loop: Loop | undefined;
  /** The exported `goal`; undefined when the file exports none (the CLI then needs `--goal`). */
  goal: string | undefined;
  /** The exported `mcp` (MCP servers whose tools `run` adds), as it is; undefined when the file exports none. */
  mcp?: unknown;
  /** The absolute path it was loaded from. */
  path: string;
}

const SUPPORTED = new Set(['.js', '.mjs', '.ts', '.mts']);

/**
 * Imports `file` and checks what it exports; every problem is a `CliError` of kind `loop_file` saying
 * what was found and what was expected.
 * @example
 * const { config, goal } = await loadLoopFile('my-loop.ts'); // relative to the working directory
 */
export async function loadLoopFile(file: string, cwd: string = process.cwd()): Promise<LoadedLoop> {
  const path = resolvePath(cwd, file);
  const fail = (message: string, cause?: unknown) => new LoopFileError({ path, message, cause });
  if (!existsSync(path) || !statSync(path).isFile()) throw fail(`no such loop file: ${file}`);
  const extension = extname(path);
  if (!SUPPORTED.has(extension))
    throw fail(
      `${file} is not a JavaScript or TypeScript module (.js, .mjs, .ts, .mts), got "${extension || 'no extension'}"`,
    );
  let exports: Record<string, unknown>;
  try {
    exports =
      extension === '.ts' || extension === '.mts'
        ? await importTypeScript(path, cwd)
        : ((await import(pathToFileURL(path).href)) as Record<string, unknown>);
  } catch (error) {
    if (error instanceof LoopFileError) throw error;
    throw fail(`${file} could not be imported: ${thrownMessage(error)}${missingLoopstateHint(error, path)}`, error);
  }
  try {
    return { ...loopOfModule(exports, file), path };
  } catch (error) {
    throw fail(thrownMessage(error), error);
  }
}

/**
 * When the loop file cannot find `loopstate` itself: where to install it, and which package the file is in (a
 * folder with a package.json of its own, e.g. a monorepo's, is a package of its own, where loopstate's is not
 * found by self-reference); an empty string for any other error.
 * @example
 * missingLoopstateHint(error, '/repo/bench/loop.ts'); // '; install loopstate for it (npm install loopstate); …'
 */
export function missingLoopstateHint(error: unknown, loopFile: string): string {
  const code = (error as { code?: unknown } | null)?.code;
  if (code !== 'ERR_MODULE_NOT_FOUND' || !/Cannot find package 'loopstate(\/[^']*)?'/.test(thrownMessage(error)))
    return '';
  const hint = '; install loopstate for it (npm install loopstate)';
  for (let folder = dirname(loopFile); ; folder = dirname(folder)) {
    const manifest = join(folder, 'package.json');
    if (existsSync(manifest)) {
      let name: unknown;
      try {
        name = (JSON.parse(readFileSync(manifest, 'utf8')) as { name?: unknown }).name;
      } catch {
        return hint;
      }
      return `${hint}; the file is in the package of ${manifest}${typeof name === 'string' ? ` ("${name}")` : ''}, where loopstate is not installed`;
    }
    if (dirname(folder) === folder) return hint;
  }
}

/**
 * What a loop module exports, checked: `default` is a loop or a loop config, `goal` a string if present.
 * @example
 * const { config, goal } = loopOfModule(await import('./my-loop.js'), 'my-loop.js');
 */
export function loopOfModule(exports: Record<string, unknown>, name: string): Omit<LoadedLoop, 'path'> {
  const exported = exports.default;
  const goal = exports.goal;
  const mcp = exports.mcp === undefined ? {} : { mcp: exports.mcp };
  if (goal !== undefined && (typeof goal !== 'string' || goal.trim() === ''))
    throw loopFileError(`${name}: the exported goal must be a non-empty string, got ${describe(goal)}`);
  if (isLoop(exported)) {
    if (!isConfig(exported.config))
      throw loopFileError(
        `${name}: the default export is a loop without its config; create it with createLoop from loopstate 0.1 or later`,
      );
    return { config: exported.config, loop: exported, goal, ...mcp };
  }
  if (isConfig(exported)) return { config: exported, loop: undefined, goal, ...mcp };
  const hint = exported === undefined ? 'there is no default export' : `the default export is ${describe(exported)}`;
  throw loopFileError(
    `${name} has no loop: its default export must be a createLoop(...) result or a loop config (${hint}); e.g. \`export default createLoop({ model, ... })\` and \`export const goal = '...'\``,
  );
}

const isObject = (value: unknown): value is Record<string, unknown> => typeof value === 'object' && value !== null;

// Duck-typed, so a loop made by another installed copy of loopstate is recognised too.
function isLoop(value: unknown): value is Loop {
  return isObject(value) && typeof value.run === 'function';
}

function isConfig(value: unknown): value is LoopConfig {
  return isObject(value) && isObject(value.model) && typeof value.model.generate === 'function';
}

function describe(value: unknown): string {
  if (value === null) return 'null';
  if (Array.isArray(value)) return 'an array';
  if (typeof value === 'object') return `an object with keys ${Object.keys(value).slice(0, 5).join(', ') || '(none)'}`;
  return `a ${typeof value} (${String(value).slice(0, 40)})`;
}

const loopFileError = (message: string, cause?: unknown, path = '') => new LoopFileError({ path, message, cause });

/**
 * Whether something in this process reads the source maps of transpiled TypeScript: Node's stack traces
 * (`--enable-source-maps`), a debugger's breakpoints (`--inspect`, `--inspect-brk`, `--inspect-wait`, on the command
 * line or in `NODE_OPTIONS`) or V8 coverage (`NODE_V8_COVERAGE`, which c8 sets).
 * @example
 * sourceMapsRead({ sourceMapsEnabled: false, execArgv: ['--inspect-brk'], env: {} }); // true
 */
export function sourceMapsRead({
  sourceMapsEnabled,
  execArgv,
  env,
}: {
  sourceMapsEnabled: boolean | undefined;
  execArgv: readonly string[];
  env: Readonly<Record<string, string | undefined>>;
}): boolean {
  const inspects = (flag: string) => /^--inspect(-brk|-wait)?(=|$)/.test(flag);
  return (
    sourceMapsEnabled === true ||
    execArgv.some(inspects) ||
    (env.NODE_OPTIONS ?? '').split(/\s+/).some(inspects) ||
    (env.NODE_V8_COVERAGE ?? '') !== ''
  );
}

let typescriptEnabled = false;
/**
 * Modules Vite's runner loaded, by path: each `runnerImport` starts a Vite server (~0.6 s) and evaluates the file
 * afresh, where `import()` evaluates a file once a process. Kept, a file loaded twice is one module on every path.
 */
const viteModules = new Map<string, Promise<Record<string, unknown>>>();

type ViteRunnerImport = (
  url: string,
  options: { configFile: false; logLevel: 'silent' },
) => Promise<{ module: Record<string, unknown> }>;

/**
 * Imports a TypeScript file, whichever way this process can: natively where Node strips types (22.6+),
 * through our module hooks and the `typescript` package, else through Vite's module runner when vite is
 * installed (also the way when loopstate itself runs bundled, without its hooks file beside it).
 */
async function importTypeScript(loopFile: string, cwd: string): Promise<Record<string, unknown>> {
  const url = pathToFileURL(loopFile).href;
  if ((process.features as { typescript?: unknown }).typescript) return (await import(url)) as Record<string, unknown>;
  const hooks = new URL('./typescript-hooks.js', import.meta.url);
  const typescriptPath = findTypeScript(loopFile, cwd);
  if (existsSync(hooks) && typescriptPath !== undefined) {
    if (!typescriptEnabled) {
      const data: TypeScriptHooksData = {
        typescriptPath,
        cacheFolder: cacheFolderBeside(typescriptPath),
        sourceMaps: sourceMapsRead({
          sourceMapsEnabled: process.sourceMapsEnabled,
          execArgv: process.execArgv,
          env: process.env,
        }),
      };
      register(hooks, { data });
    }
    typescriptEnabled = true;
    return (await import(url)) as Record<string, unknown>;
  }
  let runnerImport: ViteRunnerImport | undefined;
  try {
    // A variable specifier: vite is optional, and the compiler must not require its types.
    const specifier = 'vite';
    ({ runnerImport } = (await import(specifier)) as { runnerImport?: ViteRunnerImport });
  } catch {
    runnerImport = undefined;
  }
  if (runnerImport !== undefined) {
    const run = runnerImport;
    let loading = viteModules.get(loopFile);
    if (loading === undefined) {
      loading = run(loopFile, { configFile: false, logLevel: 'silent' }).then(({ module }) => module);
      viteModules.set(loopFile, loading);
      // A file that failed to load is tried afresh next time (it may have been fixed).
      loading.catch(() => viteModules.delete(loopFile));
    }
    return await loading;
  }
  throw new LoopFileError({
    path: loopFile,
    message:
      `${loopFile} is TypeScript, which Node ${process.versions.node} cannot run without a build step; install the typescript package ` +
      '(npm install --save-dev typescript) so loopstate can strip its types, use Node 22.6+, or compile the file and run the .js',
  });
}

/** The typescript package: the loop file's project's, the working directory's, or the one beside loopstate. */
function findTypeScript(loopFile: string, cwd: string): string | undefined {
  for (const from of [loopFile, resolvePath(cwd, 'package.json'), fileURLToPath(import.meta.url)]) {
    try {
      return createRequire(from).resolve('typescript');
    } catch {
      // Not installed there; look in the next place.
    }
  }
  return undefined;
}
