// Module hooks that let a child `node` process run this repo's TypeScript sources directly (no build
// step): `.js` specifiers resolve to the `.ts` file beside them, and `.ts` files are transpiled on load.
import { existsSync, readFileSync } from 'node:fs';
import { fileURLToPath, URL } from 'node:url';
import ts from 'typescript';

// `loopstate` and its subpaths resolve to this repo's sources, as tsconfig's `paths` say.
const tsconfigUrl = new URL('../../tsconfig.json', import.meta.url);
const sourceEntries = new Map(
  Object.entries(JSON.parse(readFileSync(tsconfigUrl, 'utf8')).compilerOptions.paths).map(([specifier, [path]]) => [
    specifier,
    new URL(path, tsconfigUrl).href,
  ]),
);

export async function resolve(specifier, context, nextResolve) {
  const source = sourceEntries.get(specifier);
  if (source !== undefined) return { url: source, shortCircuit: true };
  if (specifier.startsWith('.') && specifier.endsWith('.js') && context.parentURL?.endsWith('.ts')) {
    const candidate = new URL(specifier.replace(/\.js$/, '.ts'), context.parentURL);
    if (existsSync(fileURLToPath(candidate))) return { url: candidate.href, shortCircuit: true };
  }
  return nextResolve(specifier, context);
}

export async function load(url, context, nextLoad) {
  if (!url.endsWith('.ts')) return nextLoad(url, context);
  const fileName = fileURLToPath(url);
  const { outputText } = ts.transpileModule(readFileSync(fileName, 'utf8'), {
    fileName,
    compilerOptions: {
      module: ts.ModuleKind.ESNext,
      target: ts.ScriptTarget.ES2022,
      verbatimModuleSyntax: true,
      sourceMap: false,
    },
  });
  return { format: 'module', source: outputText, shortCircuit: true };
}
