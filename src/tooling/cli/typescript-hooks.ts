/**
 * Node module hooks (registered with `module.register`) that let `loopstate run` import a TypeScript loop
 * file without a build step: Node 20 cannot strip types, so each `.ts`/`.mts` file is transpiled (types
 * removed, nothing checked) with the `typescript` package the CLI found. The hooks run on Node's loader
 * thread; they are plain ESM with no import of the rest of loopstate.
 *
 * The hooks thread runs beside the loop's exploration, so it is kept cheap. What it transpiled is kept by the
 * source's hash in `node_modules/.cache/loopstate` (beside the `typescript` package), so an unchanged file needs no
 * `typescript` at all; when one is needed, the package is compiled through V8's code cache there (written after the
 * first transpile, so the next process compiles neither the package nor its parser and emitter). A source map is
 * made only when something reads it: Node's stack traces (`--enable-source-maps`), a debugger (`--inspect*`) or V8
 * coverage (`NODE_V8_COVERAGE`, c8).
 */
import { readFile } from 'node:fs/promises';
import { codeCacheFile, requireWithCodeCache, type CodeCachedModule } from './code-cached-require.js';
import { readTranspiled, transpiledFile, writeTranspiled } from './transpile-cache.js';

/** What `register(..., { data })` passes. */
export interface TypeScriptHooksData {
  /** The `typescript` package's entry file. */
  typescriptPath: string;
  /** The folder for the package's V8 code cache; undefined: none (a plain `require`). */
  cacheFolder?: string | undefined;
  /** Whether to inline a source map in each transpiled file (stack traces, a debugger or V8 coverage read it). */
  sourceMaps?: boolean | undefined;
}

/** The part of the `typescript` package the hooks use. */
export interface TranspileApi {
  transpileModule(
    source: string,
    options: { fileName: string; compilerOptions: Record<string, unknown>; reportDiagnostics?: boolean },
  ): { outputText: string };
  ModuleKind: { ESNext: number };
  ScriptTarget: { ES2022: number };
}

type NextResolve = (
  specifier: string,
  context: { parentURL?: string },
) => Promise<{ url: string; format?: string | null }>;
type NextLoad = (
  url: string,
  context: { format?: string | null },
) => Promise<{ format: string; source?: string | ArrayBuffer | Uint8Array | null }>;

let settings: TypeScriptHooksData | undefined;
let typescript: { api: TranspileApi; module: CodeCachedModule } | undefined;

export function initialize(data: TypeScriptHooksData): void {
  settings = data;
}

/** The `typescript` package, required on the first TypeScript file (through the code cache when there is a folder). */
function typescriptApi(data: TypeScriptHooksData): { api: TranspileApi; module: CodeCachedModule } {
  if (typescript !== undefined) return typescript;
  let cacheFile: string | undefined;
  try {
    cacheFile = data.cacheFolder === undefined ? undefined : codeCacheFile(data.typescriptPath, data.cacheFolder);
  } catch {
    cacheFile = undefined;
  }
  const module = requireWithCodeCache(data.typescriptPath, cacheFile);
  typescript = { api: module.exports as TranspileApi, module };
  return typescript;
}

/**
 * The options every TypeScript file is transpiled with: an ES module for ES2022, types removed and nothing checked
 * (`transpileModule` is `isolatedModules`); an inline source map (with the source) only when `sourceMaps`.
 * @example
 * typescript.transpileModule(source, { fileName, compilerOptions: transpileOptions(typescript, false) });
 */
export function transpileOptions(api: TranspileApi, sourceMaps: boolean): Record<string, unknown> {
  return {
    module: api.ModuleKind.ESNext,
    target: api.ScriptTarget.ES2022,
    sourceMap: false,
    ...(sourceMaps ? { inlineSourceMap: true, inlineSources: true } : {}),
  };
}

/** `source` transpiled: from the transpile cache when this source was transpiled before, else by `typescript`. */
function transpiled(data: TypeScriptHooksData, fileName: string, source: string): string {
  const sourceMaps = data.sourceMaps === true;
  let cacheFile: string | undefined;
  try {
    cacheFile =
      data.cacheFolder === undefined
        ? undefined
        : transpiledFile({
            folder: data.cacheFolder,
            typescriptPath: data.typescriptPath,
            fileName,
            sourceMaps,
            source,
          });
  } catch {
    cacheFile = undefined;
  }
  const cached = cacheFile === undefined ? undefined : readTranspiled(cacheFile);
  if (cached !== undefined) return cached;
  const { api, module } = typescriptApi(data);
  const { outputText } = api.transpileModule(source, {
    fileName,
    compilerOptions: transpileOptions(api, sourceMaps),
  });
  // After the first transpile, so the code cache holds the parser and emitter too (a no-op once written or taken).
  module.saveCodeCache();
  if (cacheFile !== undefined) writeTranspiled(cacheFile, outputText);
  return outputText;
}

const isTypeScript = (url: string) => /\.m?ts$/.test(new URL(url).pathname) && !url.endsWith('.d.ts');

/**
 * TypeScript sources import their siblings as `./helpers.js` (or without an extension); when no such
 * file exists next to a `.ts` parent, the `.ts` file is meant.
 */
export async function resolve(specifier: string, context: { parentURL?: string }, nextResolve: NextResolve) {
  try {
    return await nextResolve(specifier, context);
  } catch (error) {
    const parent = context.parentURL;
    const relative = specifier.startsWith('./') || specifier.startsWith('../');
    if (
      !relative ||
      parent === undefined ||
      !isTypeScript(parent) ||
      (error as { code?: string }).code !== 'ERR_MODULE_NOT_FOUND'
    )
      throw error;
    for (const candidate of [specifier.replace(/\.(m?)js$/, '.$1ts'), `${specifier}.ts`]) {
      if (candidate === specifier) continue;
      try {
        return await nextResolve(candidate, context);
      } catch {
        // Try the next spelling; the original error is the one worth reporting.
      }
    }
    throw error;
  }
}

export async function load(url: string, context: { format?: string | null }, nextLoad: NextLoad) {
  if (!url.startsWith('file:') || !isTypeScript(url) || settings === undefined) return nextLoad(url, context);
  const source = await readFile(new URL(url), 'utf8');
  return { format: 'module', source: transpiled(settings, new URL(url).pathname, source), shortCircuit: true };
}
