/**
 * `loopstate` and its subpaths as this repo's sources, read from tsconfig's `paths` (the one list of them):
 * vitest and the bundles tests build resolve the package's own specifiers here, so tests import what users import.
 */
import { readFileSync } from 'node:fs';

const tsconfigUrl = new URL('../../tsconfig.json', import.meta.url);

export interface SourceAlias {
  find: RegExp;
  replacement: string;
}

/** Vite/vitest aliases, longest specifier first (`loopstate/testing` before `loopstate`). */
export function sourceEntryAliases(): SourceAlias[] {
  const tsconfig = JSON.parse(readFileSync(tsconfigUrl, 'utf8')) as {
    compilerOptions: { paths: Record<string, [string]> };
  };
  return Object.entries(tsconfig.compilerOptions.paths)
    .sort(([a], [b]) => b.length - a.length)
    .map(([specifier, [path]]) => ({
      find: new RegExp(`^${specifier.replace('/', '\\/')}$`),
      replacement: new URL(path, tsconfigUrl).pathname,
    }));
}
