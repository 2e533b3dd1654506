/**
 * The package as users get it: `npm pack`, then `npm install <tarball> zod` into a fresh app with
 * `--strict-allow-scripts` (an install script anywhere fails the install). The core must come with a handful of
 * packages and no native build, run a loop, and tell the user the install command when an adapter's optional
 * peer is missing. Needs the npm registry (for xstate, @opentelemetry/api and zod), as `npm ci` does.
 */
import { execFile } from 'node:child_process';
import { mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync, existsSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';

const run = promisify(execFile);
const repoRoot = resolve(dirname(fileURLToPath(import.meta.url)), '..', '..');
const work = mkdtempSync(join(tmpdir(), 'loopstate-package-'));
const app = join(work, 'app');
let installOutput = '';

/** Every package under node_modules (scoped ones counted one by one). */
function installedPackages(root: string): string[] {
  const names: string[] = [];
  const walk = (dir: string) => {
    if (!existsSync(dir)) return;
    for (const entry of readdirSync(dir)) {
      if (entry.startsWith('.')) continue;
      if (entry.startsWith('@')) {
        for (const scoped of readdirSync(join(dir, entry))) {
          names.push(`${entry}/${scoped}`);
          walk(join(dir, entry, scoped, 'node_modules'));
        }
      } else {
        names.push(entry);
        walk(join(dir, entry, 'node_modules'));
      }
    }
  };
  walk(join(root, 'node_modules'));
  return names.sort();
}

async function nodeInApp(source: string): Promise<string> {
  const file = join(app, `probe-${Math.random().toString(36).slice(2)}.mjs`);
  writeFileSync(file, source);
  const { stdout } = await run(process.execPath, [file], { cwd: app, timeout: 60_000 });
  return stdout.trim();
}

beforeAll(async () => {
  const { stdout } = await run('npm', ['pack', '--silent', '--pack-destination', work], {
    cwd: repoRoot,
    timeout: 240_000,
    maxBuffer: 64 * 1024 * 1024,
  });
  const tarball = join(work, stdout.trim().split('\n').pop()!);
  await run('mkdir', ['-p', app]);
  writeFileSync(
    join(app, 'package.json'),
    JSON.stringify({ name: 'fresh-app', version: '1.0.0', private: true, type: 'module' }),
  );
  const installed = await run(
    'npm',
    ['install', tarball, 'zod@^4', '--no-audit', '--no-fund', '--strict-allow-scripts'],
    { cwd: app, timeout: 240_000 },
  );
  installOutput = `${installed.stdout}\n${installed.stderr}`;
}, 480_000);

afterAll(() => rmSync(work, { recursive: true, force: true }));

describe('npm install <tarball> zod in a fresh app', () => {
  it('brings at most 8 packages, none with an install script (strict-allow-scripts passed)', () => {
    const packages = installedPackages(app);
    expect(packages).toContain('loopstate');
    expect(packages.length, packages.join(', ')).toBeLessThanOrEqual(8);
    expect(packages).not.toContain('better-sqlite3');
    expect(packages).not.toContain('openai');
    expect(installOutput).not.toMatch(/install-scripts/);
  });

  it('ships the license, no sources of tests, and source maps that carry their sources', () => {
    const root = join(app, 'node_modules', 'loopstate');
    expect(readFileSync(join(root, 'LICENSE'), 'utf8')).toMatch(/^MIT License/);
    const manifest = JSON.parse(readFileSync(join(root, 'package.json'), 'utf8')) as {
      scripts?: Record<string, string>;
    };
    expect(manifest.scripts?.prepare).toBeUndefined();
    const map = JSON.parse(readFileSync(join(root, 'dist', 'src', 'engine', 'loop.js.map'), 'utf8')) as {
      sourcesContent?: string[];
    };
    expect(map.sourcesContent?.[0]).toMatch(/createLoop/);
    expect(existsSync(join(root, 'dist', 'test'))).toBe(false);
  });

  it('runs a core loop with a scripted model', async () => {
    const output = await nodeInApp(`
      import { createLoop, defineTool } from 'loopstate';
      import { scriptedModel, reply, toolCall } from 'loopstate/testing';
      import { z } from 'zod';
      const lookup = defineTool({ name: 'lookup', description: 'look up', input: z.object({ id: z.string() }), access: 'read', execute: async ({ id }) => ({ id, status: 'shipped' }) });
      const loop = createLoop({ model: scriptedModel([toolCall('lookup', { id: 'A-1' }), reply('A-1 has shipped')]), tools: [lookup] });
      const result = await loop.run({ goal: 'where is A-1?' });
      console.log(JSON.stringify({ stopReason: result.stopReason, output: result.output, steps: result.steps }));
    `);
    expect(JSON.parse(output)).toEqual({ stopReason: 'completed', output: 'A-1 has shipped', steps: 2 });
  });

  it('names the install command when an adapter is used without its package', async () => {
    const output = await nodeInApp(`
      const outcomes = {};
      const { sqliteStore } = await import('loopstate/sqlite');
      try { sqliteStore({ path: 'loops.db' }); outcomes.sqlite = 'no error'; } catch (error) { outcomes.sqlite = { code: error.code, message: error.message }; }
      const { openaiModel } = await import('loopstate/openai');
      try { openaiModel({ model: 'gpt-4.1-mini', apiKey: 'sk-test' }); outcomes.openai = 'no error'; } catch (error) { outcomes.openai = { code: error.code, message: error.message }; }
      console.log(JSON.stringify(outcomes));
    `);
    const outcomes = JSON.parse(output) as Record<string, { code: string; message: string }>;
    expect(outcomes.sqlite).toEqual({
      code: 'missing_dependency',
      message:
        'sqliteStore needs the package better-sqlite3, which is not installed: run `npm install better-sqlite3@~12.11`',
    });
    expect(outcomes.openai).toMatchObject({ code: 'missing_dependency' });
    expect(outcomes.openai!.message).toMatch(/npm install openai/);
  });

  it('runs loopstate/ai-sdk with no AI SDK package installed: nothing of @ai-sdk/provider loads at run time', async () => {
    const output = await nodeInApp(`
      import { createLoop } from 'loopstate';
      import { aiSdkModel } from 'loopstate/ai-sdk';
      const usage = { inputTokens: { total: 12, noCache: 12, cacheRead: 0, cacheWrite: 0 }, outputTokens: { total: 3, text: 3, reasoning: 0 } };
      const languageModel = {
        specificationVersion: 'v3', provider: 'hand.chat', modelId: 'hand-1', supportedUrls: {},
        doGenerate: async () => ({ content: [{ type: 'text', text: 'hello' }], finishReason: { unified: 'stop', raw: 'stop' }, usage, warnings: [] }),
        doStream: async () => { throw new Error('not streamed'); },
      };
      const result = await createLoop({ model: aiSdkModel(languageModel) }).run({ goal: 'greet' });
      console.log(JSON.stringify({ stopReason: result.stopReason, output: result.output }));
    `);
    expect(installedPackages(app)).not.toContain('@ai-sdk/provider');
    expect(JSON.parse(output)).toEqual({ stopReason: 'completed', output: 'hello' });
  });

  it('runs the CLI on the embedded example without any adapter installed', async () => {
    const { stdout } = await run(join(app, 'node_modules', '.bin', 'loopstate'), ['run', 'order-status', '--json'], {
      cwd: app,
      timeout: 60_000,
    });
    expect(JSON.parse(stdout)).toMatchObject({ modelId: 'scripted', result: { stopReason: 'completed' } });
  });
});
