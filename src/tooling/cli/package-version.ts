/**
 * The version in loopstate's own package.json, found by walking up from this module: the file
 * sits at a different depth in src/ (tests) and dist/src/ (the built bin).
 */
import { readFileSync } from 'node:fs';

const PACKAGE_NAME = 'loopstate';

export function packageVersion(from: URL = new URL('.', import.meta.url)): string {
  for (let directory = from; ;) {
    const manifest = readManifest(new URL('package.json', directory));
    if (manifest?.name === PACKAGE_NAME && typeof manifest.version === 'string') return manifest.version;
    const parent = new URL('..', directory);
    if (parent.href === directory.href)
      throw new Error(`cannot find the package.json of ${PACKAGE_NAME} above ${from.pathname}`);
    directory = parent;
  }
}

function readManifest(file: URL): { name?: unknown; version?: unknown } | undefined {
  try {
    return JSON.parse(readFileSync(file, 'utf8')) as { name?: unknown; version?: unknown };
  } catch (error) {
    // Only "no such file" means keep looking; a broken manifest of ours should surface.
    if ((error as NodeJS.ErrnoException).code === 'ENOENT') return undefined;
    throw error;
  }
}
