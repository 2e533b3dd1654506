/**
 * Builds one TypeScript entry into a single ES module that plain `node` runs: how tests start real child
 * processes (a CLI, a loop to kill) from a clean clone, with no `dist/` built first.
 */
import { build } from 'vite';
import { sourceEntryAliases } from './source-entries.js';

export interface BundleOptions {
  /** The entry file, absolute. */
  entry: string;
  outDir: string;
  /** The output's file name, e.g. `cli.mjs`. */
  fileName: string;
  /** Empty `outDir` first (default false: several bundles may share a folder). */
  emptyOutDir?: boolean;
  /** Inline every dependency too, for a bundle run from a folder with no node_modules (default false). */
  selfContained?: boolean;
}

export async function bundleForNode({
  entry,
  outDir,
  fileName,
  emptyOutDir = false,
  selfContained = false,
}: BundleOptions): Promise<string> {
  await build({
    configFile: false,
    logLevel: 'silent',
    resolve: { alias: sourceEntryAliases() },
    build: {
      ssr: entry,
      outDir,
      emptyOutDir,
      minify: false,
      target: 'node20',
      rollupOptions: { output: { format: 'es', entryFileNames: fileName } },
    },
    ...(selfContained ? { ssr: { noExternal: true, target: 'node' as const } } : {}),
  });
  return `${outDir}/${fileName}`;
}
