/**
 * Node module hooks (registered with `module.register`) that let `loopstate run` import a TypeScript loop
 * file without a build step: Node 20 cannot strip types, so each `.ts`/`.mts` file is transpiled (types
 * removed, nothing checked) with the `typescript` package the CLI found. The hooks run on Node's loader
 * thread; they are plain ESM with no import of the rest of loopstate.
 */
import { readFile } from 'node:fs/promises';
import { createRequire } from 'node:module';

/** What `register(..., { data })` passes: where the `typescript` package's entry file is. */
export interface TypeScriptHooksData {
  typescriptPath: string;
}

interface TranspileApi {
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

let typescript: TranspileApi | undefined;

export function initialize(data: TypeScriptHooksData): void {
  typescript = createRequire(import.meta.url)(data.typescriptPath) as TranspileApi;
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
  if (!url.startsWith('file:') || !isTypeScript(url) || typescript === undefined) return nextLoad(url, context);
  const source = await readFile(new URL(url), 'utf8');
  const { outputText } = typescript.transpileModule(source, {
    fileName: new URL(url).pathname,
    compilerOptions: {
      module: typescript.ModuleKind.ESNext,
      target: typescript.ScriptTarget.ES2022,
      sourceMap: false,
      inlineSourceMap: true,
      inlineSources: true,
    },
  });
  return { format: 'module', source: outputText, shortCircuit: true };
}
