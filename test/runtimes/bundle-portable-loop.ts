/**
 * Bundles the portable loop into one self-contained ES module for a runtime that is not Node (a browser page,
 * Bun, Deno), with vite. The build fails on any import of a Node built-in: a browser build would otherwise only
 * warn and stub it, and the bundle would fail later, somewhere less clear.
 */
import { builtinModules } from 'node:module';
import { build, type Plugin } from 'vite';
import { expect } from 'vitest';
import { sourceEntryAliases } from '../support/source-entries.js';

const nodeBuiltins = new Set(builtinModules.flatMap((name) => [name, `node:${name}`]));

/** Fails the build at the first Node built-in any module imports, naming the importer. */
function refuseNodeBuiltins(): Plugin {
  return {
    name: 'refuse-node-builtins',
    enforce: 'pre',
    resolveId(source, importer) {
      if (source.startsWith('node:') || nodeBuiltins.has(source))
        this.error(`${importer ?? 'the entry'} imports the Node built-in ${source}`);
      return null;
    },
  };
}

/** Builds `entry` (the portable loop by default) into `outDir/portable-loop.mjs` and returns that path. */
export async function bundlePortableLoop(
  outDir: string,
  entry = new URL('portable-loop.ts', import.meta.url).pathname,
): Promise<string> {
  await build({
    configFile: false,
    logLevel: 'silent',
    resolve: { alias: sourceEntryAliases() },
    plugins: [refuseNodeBuiltins()],
    build: {
      outDir,
      emptyOutDir: true,
      minify: false,
      target: 'es2022',
      lib: { entry, formats: ['es'], fileName: () => 'portable-loop.mjs' },
    },
  });
  return `${outDir}/portable-loop.mjs`;
}

/** What the portable loop prints, read from a runtime's output; fails naming the output when there is no result line. */
export function portableResult(output: string): unknown {
  const line = output.split('\n').find((candidate) => candidate.startsWith('loopstate-result '));
  if (line === undefined) throw new Error(`the portable loop printed no result:\n${output}`);
  return JSON.parse(line.slice('loopstate-result '.length));
}

/** The result every runtime must print: the same stop reasons, outputs and argument hash as Node. */
export const EXPECTED_RESULT = {
  answered: { stopReason: 'completed', output: { order_id: 'O-1', status: 'shipped' } },
  looping: {
    stopReason: 'no_progress',
    detail: expect.stringContaining('brought the same result 3 times in this task (threshold 2)') as unknown,
  },
  // digest64 of the canonical arguments: the same in every runtime, so an approval taken in one binds in another.
  durable: {
    waiting: 'needs_human',
    argumentsHash: 'c8c68c451f92d3f1',
    runId: expect.stringMatching(/^run_[0-9a-z]+_[0-9a-f]{8}$/) as unknown,
    approved: 'completed',
    output: 'Refunded O-3.',
  },
};
