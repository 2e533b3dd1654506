/**
 * The source tree's layers, checked on every import (type-only and dynamic ones included): the statechart
 * at the bottom, then contracts ← engine ← adapters ← tooling; no import cycle; adapters never import each
 * other (one declared exception: dbos → postgres); each third-party package is imported in its own folder
 * only; tooling reaches the rest through entry points; no Node built-in is reachable from the core's entries. ESLint says the same per file as you type
 * (eslint.config.js); this test sees the whole graph.
 */
import { readFileSync, readdirSync, statSync, existsSync } from 'node:fs';
import { dirname, join, relative, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import ts from 'typescript';
import { describe, expect, it } from 'vitest';

const repoRoot = resolve(dirname(fileURLToPath(import.meta.url)), '..', '..');

type Layer = 'statechart' | 'contracts' | 'engine' | 'entry' | 'testing' | 'tooling' | 'examples' | `adapter:${string}`;

/** Entry points: the core's barrels and each adapter's `index.ts`. Tooling imports only these (and contracts). */
const isEntry = (path: string) =>
  path === 'src/index.ts' || path === 'src/internal.ts' || /^src\/(testing|adapters\/[^/]+)\/index\.ts$/.test(path);

function layerOf(path: string): Layer {
  if (/^(machines|guards|actions)\//.test(path)) return 'statechart';
  if (path === 'src/index.ts' || path === 'src/internal.ts') return 'entry';
  if (path.startsWith('src/contracts/')) return 'contracts';
  if (path.startsWith('src/engine/')) return 'engine';
  if (path.startsWith('src/testing/')) return 'testing';
  if (path.startsWith('src/tooling/')) return 'tooling';
  // The loops `loopstate run <name>` runs offline; they import the package by its name, as users do.
  if (path.startsWith('examples/')) return 'examples';
  const adapter = /^src\/adapters\/([^/]+)\//.exec(path);
  if (adapter) return `adapter:${adapter[1]}`;
  throw new Error(`${path} is in no layer`);
}

/** Which layers each layer may import (its own included). */
function mayImport(from: Layer, to: Layer, toPath: string): boolean {
  if (to === 'statechart') return true;
  if (from === 'statechart') return false;
  if (to === 'contracts') return true;
  if (from === 'contracts') return false;
  if (from === 'engine') return to === 'engine';
  if (from === 'entry') return to === 'engine' || to === 'entry' || to === 'testing' || to.startsWith('adapter:');
  if (from === 'testing') return to === 'engine' || to === 'testing';
  if (from.startsWith('adapter:'))
    return to === 'engine' || to === from || (from === 'adapter:dbos' && to === 'adapter:postgres' && isEntry(toPath));
  // Tooling: its own files, entry points and the bundled examples only.
  return from === 'tooling' && (to === 'tooling' || to === 'examples' || isEntry(toPath));
}

/** Third-party packages and the layers that may import them; anything unlisted is an undeclared dependency. */
const PACKAGE_HOMES: Record<string, (layer: Layer) => boolean> = {
  xstate: () => true,
  zod: () => true,
  '@opentelemetry/api': (layer) => layer === 'engine' || layer === 'contracts',
  openai: (layer) => layer === 'adapter:openai',
  // Type-only: the adapter recognises the AI SDK's errors by their marker symbols, so nothing of it loads at run time.
  '@ai-sdk/provider': (layer) => layer === 'adapter:ai-sdk',
  'ai-sdk-provider-v2': (layer) => layer === 'adapter:ai-sdk',
  // Test-only: providers and the mock model the ai-sdk adapter's tests run against.
  '@ai-sdk/anthropic': () => false,
  '@ai-sdk/openai-compatible': () => false,
  ai: () => false,
  '@modelcontextprotocol/sdk': (layer) => layer === 'adapter:mcp',
  'better-sqlite3': (layer) => layer === 'adapter:sqlite',
  pg: (layer) => layer === 'adapter:postgres',
  '@dbos-inc/dbos-sdk': (layer) => layer === 'adapter:dbos',
  '@statelyai/inspect': (layer) => layer === 'adapter:stately',
  ws: (layer) => layer === 'adapter:stately',
  // The statechart's layout is computed at build time and shipped; elkjs is a dev dependency.
  elkjs: () => false,
};

const packageOf = (specifier: string) =>
  specifier.startsWith('@') ? specifier.split('/').slice(0, 2).join('/') : specifier.split('/')[0]!;

function sourceFiles(): string[] {
  const files: string[] = [];
  const walk = (dir: string) => {
    for (const entry of readdirSync(join(repoRoot, dir))) {
      const path = `${dir}/${entry}`;
      if (statSync(join(repoRoot, path)).isDirectory()) walk(path);
      else if (path.endsWith('.ts') && !path.endsWith('.test.ts') && !path.endsWith('.d.ts')) files.push(path);
    }
  };
  for (const dir of ['machines', 'guards', 'actions', 'src']) walk(dir);
  return files.sort();
}

interface ImportEdge {
  from: string;
  specifier: string;
  /** The repo-relative file a relative specifier names; null for a package. */
  to: string | null;
}

function importsOf(path: string): ImportEdge[] {
  const info = ts.preProcessFile(readFileSync(join(repoRoot, path), 'utf8'), true, true);
  return info.importedFiles.map(({ fileName: specifier }) => {
    if (!specifier.startsWith('.')) return { from: path, specifier, to: null };
    const base = join(dirname(path), specifier);
    const candidates = [base.replace(/\.js$/, '.ts'), `${base}.ts`, join(base, 'index.ts'), base];
    const to = candidates.find(
      (candidate) => existsSync(join(repoRoot, candidate)) && statSync(join(repoRoot, candidate)).isFile(),
    );
    if (to === undefined) throw new Error(`${path}: cannot resolve ${specifier}`);
    return { from: path, specifier, to: relative(repoRoot, join(repoRoot, to)) };
  });
}

const files = sourceFiles();
const tsconfigPaths = Object.fromEntries(
  Object.entries(
    (
      JSON.parse(readFileSync(join(repoRoot, 'tsconfig.json'), 'utf8')) as {
        compilerOptions: { paths: Record<string, [string]> };
      }
    ).compilerOptions.paths,
  ).map(([specifier, [path]]) => [specifier, path]),
);
const edges = files.flatMap(importsOf);

/** Strongly connected components of more than one file (Tarjan), each sorted. */
function importCycles(): string[][] {
  const next = new Map<string, string[]>(files.map((file) => [file, []]));
  for (const edge of edges) if (edge.to !== null && next.has(edge.to)) next.get(edge.from)!.push(edge.to);
  let counter = 0;
  const index = new Map<string, number>();
  const low = new Map<string, number>();
  const stack: string[] = [];
  const onStack = new Set<string>();
  const cycles: string[][] = [];
  const visit = (file: string) => {
    index.set(file, counter);
    low.set(file, counter++);
    stack.push(file);
    onStack.add(file);
    for (const to of next.get(file)!) {
      if (!index.has(to)) {
        visit(to);
        low.set(file, Math.min(low.get(file)!, low.get(to)!));
      } else if (onStack.has(to)) low.set(file, Math.min(low.get(file)!, index.get(to)!));
    }
    if (low.get(file) === index.get(file)) {
      const component: string[] = [];
      let member: string;
      do {
        member = stack.pop()!;
        onStack.delete(member);
        component.push(member);
      } while (member !== file);
      if (component.length > 1) cycles.push(component.sort());
    }
  };
  for (const file of files) if (!index.has(file)) visit(file);
  return cycles;
}

describe('the source tree', () => {
  it('has every source file in a layer', () => {
    expect(files.length).toBeGreaterThan(150);
    for (const file of files) expect(() => layerOf(file)).not.toThrow();
  });

  it('has no import cycle, type-only imports included', () => {
    expect(importCycles()).toEqual([]);
  });

  it('imports only downwards, adapters never each other, tooling through entry points', () => {
    const upward = edges
      .filter((edge) => edge.to !== null && !mayImport(layerOf(edge.from), layerOf(edge.to), edge.to))
      .map((edge) => `${edge.from} (${layerOf(edge.from)}) → ${edge.to} (${layerOf(edge.to!)})`);
    expect(upward).toEqual([]);
  });

  it('imports each third-party package in its own folder only', () => {
    const misplaced = edges
      .filter((edge) => edge.to === null && !edge.specifier.startsWith('node:'))
      .filter((edge) => {
        const home = PACKAGE_HOMES[packageOf(edge.specifier)];
        const layer = layerOf(edge.from);
        // Tooling may load what the user has installed (the CLI's TypeScript loader, say); a listed package stays home.
        return home === undefined ? layer !== 'tooling' : !home(layer);
      })
      .map((edge) => `${edge.from} imports ${edge.specifier}`);
    expect(misplaced).toEqual([]);
  });

  it('keeps Node built-ins out of the statechart, contracts, engine, testing and the core entries', () => {
    const forbidden = edges
      .filter(
        (edge) =>
          edge.specifier.startsWith('node:') &&
          ['statechart', 'contracts', 'engine', 'testing', 'entry'].includes(layerOf(edge.from)),
      )
      .map((edge) => `${edge.from} imports ${edge.specifier}`);
    expect(forbidden).toEqual([]);
  });

  it('reaches no Node built-in from loopstate or loopstate/testing (static and dynamic imports, type-only included)', () => {
    const reachable = (entry: string) => {
      const seen = new Set<string>([entry]);
      const nodeImports: string[] = [];
      for (const file of seen) {
        for (const edge of edges.filter((candidate) => candidate.from === file)) {
          if (edge.specifier.startsWith('node:')) nodeImports.push(`${file} imports ${edge.specifier}`);
          if (edge.to !== null) seen.add(edge.to);
          // The package's own specifiers (an adapter importing `loopstate`, say) lead to their entries.
          else if (edge.specifier === 'loopstate' || edge.specifier.startsWith('loopstate/'))
            seen.add(tsconfigPaths[edge.specifier]!.slice(2));
        }
      }
      return { files: seen.size, nodeImports };
    };
    for (const [entry, atLeast] of [
      ['src/index.ts', 80],
      ['src/testing/index.ts', 5],
    ] as const) {
      const { files: count, nodeImports } = reachable(entry);
      expect(count, entry).toBeGreaterThan(atLeast);
      expect(nodeImports, entry).toEqual([]);
    }
    // The walk is not vacuous: the Node-only subpath is reached from its own entry.
    expect(reachable('src/adapters/node/index.ts').nodeImports).toEqual([
      'src/adapters/node/read-trace-file.ts imports node:fs',
    ]);
  });

  it('checks imports the way the tree really is (the rules are not vacuous)', () => {
    expect(mayImport('engine', 'adapter:openai', 'src/adapters/openai/openai-model.ts')).toBe(false);
    expect(mayImport('adapter:sqlite', 'adapter:postgres', 'src/adapters/postgres/index.ts')).toBe(false);
    expect(mayImport('tooling', 'engine', 'src/engine/loop.ts')).toBe(false);
    expect(edges.some((edge) => edge.specifier === 'openai' && edge.from.startsWith('src/adapters/openai/'))).toBe(
      true,
    );
  });
});

describe('the package manifest', () => {
  const manifest = JSON.parse(readFileSync(join(repoRoot, 'package.json'), 'utf8')) as {
    exports: Record<string, string | { types: string; default: string }>;
  };
  const tsconfig = JSON.parse(readFileSync(join(repoRoot, 'tsconfig.json'), 'utf8')) as {
    compilerOptions: { paths: Record<string, [string]> };
  };

  it("maps each export to an entry file, and tsconfig's paths to the same sources", () => {
    const fromExports = Object.entries(manifest.exports)
      .filter(([subpath]) => subpath !== './package.json')
      .map(([subpath, target]) => [
        subpath === '.' ? 'loopstate' : `loopstate/${subpath.slice(2)}`,
        (target as { default: string }).default.replace(/^\.\/dist\//, './').replace(/\.js$/, '.ts'),
      ]);
    expect(Object.fromEntries(fromExports)).toEqual(
      Object.fromEntries(
        Object.entries(tsconfig.compilerOptions.paths).map(([specifier, [path]]) => [specifier, path]),
      ),
    );
    for (const [, path] of fromExports) expect(isEntry(path!.slice(2)), path).toBe(true);
  });

  it('exports every public name from exactly one entry', () => {
    const owners = new Map<string, string[]>();
    for (const [specifier, [path]] of Object.entries(tsconfig.compilerOptions.paths)) {
      if (specifier === 'loopstate/internal') continue;
      const text = readFileSync(join(repoRoot, path), 'utf8');
      for (const match of text.matchAll(/export\s+(?:type\s+)?\{([^}]*)\}/g)) {
        for (const part of match[1]!.split(',')) {
          const name = part
            .trim()
            .replace(/^type\s+/, '')
            .split(/\s+as\s+/)
            .pop()!
            .trim();
          if (name !== '') owners.set(name, [...(owners.get(name) ?? []), specifier]);
        }
      }
    }
    expect(owners.size).toBeGreaterThan(80);
    expect([...owners].filter(([, specifiers]) => specifiers.length > 1)).toEqual([]);
  });
});
