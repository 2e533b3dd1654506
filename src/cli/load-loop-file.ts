/**
 * Loads a loop file for the CLI (`loopstate run`, `loopstate verify`): a module whose default export is a
 * `createLoop` result or a loop config, and which may export `goal`.
 *
 * JavaScript files are imported as they are. TypeScript files run without a build step: natively where
 * Node strips types itself (22.6 and later, `process.features.typescript`), otherwise through Vite's module
 * runner when `vite` is installed (a development dependency of most TypeScript projects), which also
 * resolves `./x.js` imports to `./x.ts` as `tsc` does.
 */
import { existsSync, statSync } from 'node:fs';
import { extname, resolve } from 'node:path';
import { pathToFileURL } from 'node:url';
import { LoopstateError } from '../errors.js';
import { thrownMessage } from '../redaction/describe-thrown.js';

/**
 * A loop file that cannot be loaded: missing, not a module the CLI can import, or without a loop.
 * @example
 * try { await loadLoopFile('loop.ts') } catch (error) { if (error instanceof LoopFileError) console.error(error.message) }
 */
export class LoopFileError extends LoopstateError {
  readonly path: string;
  constructor({ path, message, cause }: { path: string; message: string; cause?: unknown }) {
    super({ code: 'loop_file', message, cause });
    this.path = path;
  }
}

export interface LoadedLoopFile {
  /** Absolute path of the file. */
  path: string;
  /** The default export: a `createLoop` result or a loop config (not validated here). */
  loop: unknown;
  /** The exported `goal`, when the file has one. */
  goal: string | undefined;
  module: Record<string, unknown>;
}

const TYPESCRIPT = new Set(['.ts', '.mts', '.cts']);
const JAVASCRIPT = new Set(['.js', '.mjs', '.cjs']);

type ViteRunnerImport = (url: string, options: { configFile: false; logLevel: 'silent' }) => Promise<{ module: Record<string, unknown> }>;

async function importTypeScript(path: string): Promise<Record<string, unknown>> {
  if ((process.features as { typescript?: unknown }).typescript) return (await import(pathToFileURL(path).href)) as Record<string, unknown>;
  let runnerImport: ViteRunnerImport | undefined;
  try {
    // A variable specifier: vite is optional, and the compiler must not require its types.
    const specifier = 'vite';
    ({ runnerImport } = (await import(specifier)) as { runnerImport?: ViteRunnerImport });
  } catch {
    runnerImport = undefined;
  }
  if (runnerImport === undefined) {
    throw new LoopFileError({
      path,
      message: `cannot load TypeScript file ${path}: this Node (${process.version}) does not strip types and vite (6.1 or later) is not installed; use Node 22.6+, install vite as a development dependency, or compile the file to JavaScript`,
    });
  }
  return (await runnerImport(path, { configFile: false, logLevel: 'silent' })).module;
}

/**
 * Imports the loop file at `file` (relative to the working directory) and reads its exports.
 * @example
 * const { loop, goal } = await loadLoopFile('examples/order-status.ts');
 */
export async function loadLoopFile(file: string): Promise<LoadedLoopFile> {
  const path = resolve(file);
  if (!existsSync(path) || !statSync(path).isFile()) throw new LoopFileError({ path, message: `no such loop file: ${file}` });
  const extension = extname(path);
  if (!TYPESCRIPT.has(extension) && !JAVASCRIPT.has(extension)) {
    throw new LoopFileError({ path, message: `${file} is not a JavaScript or TypeScript module (.js, .mjs, .cjs, .ts, .mts, .cts)` });
  }
  let module: Record<string, unknown>;
  try {
    module = TYPESCRIPT.has(extension) ? await importTypeScript(path) : ((await import(pathToFileURL(path).href)) as Record<string, unknown>);
  } catch (error) {
    if (error instanceof LoopFileError) throw error;
    throw new LoopFileError({ path, message: `${file} failed to load: ${thrownMessage(error)}`, cause: error });
  }
  const loop = module.default;
  if (typeof loop !== 'object' || loop === null) {
    throw new LoopFileError({ path, message: `${file} has no loop: its default export must be a createLoop(...) result or a loop config (export default createLoop({ model, ... }))` });
  }
  return { path, loop, goal: typeof module.goal === 'string' ? module.goal : undefined, module };
}
