import { spawnSync } from 'node:child_process';
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { pathToFileURL } from 'node:url';
import { afterAll, describe, expect, it } from 'vitest';
import { createLoop } from '../../index.js';
import { reply, scriptedModel } from '../../testing/index.js';
import { CliError } from './cli-error.js';
import { loadLoopFile, loopOfModule, missingLoopstateHint, sourceMapsRead } from './load-loop-file.js';

const directory = mkdtempSync(join(tmpdir(), 'loopstate-load-'));
afterAll(() => rmSync(directory, { recursive: true, force: true }));

describe('loopOfModule', () => {
  it('takes a createLoop result with its config, or a config, and the goal', () => {
    const config = { model: scriptedModel([reply('x')]) };
    const loop = createLoop(config);
    expect(loopOfModule({ default: loop, goal: 'Do it' }, 'a.ts')).toEqual({
      config: loop.config,
      loop,
      goal: 'Do it',
    });
    expect(loop.config.model).toBe(config.model);
    expect(loopOfModule({ default: config }, 'b.ts')).toEqual({ config, loop: undefined, goal: undefined });
  });

  it.each([
    [
      {},
      'm.js has no loop: its default export must be a createLoop(...) result or a loop config (there is no default export)',
    ],
    [{ default: { tools: [] } }, '(the default export is an object with keys tools)'],
    [{ default: 'loop' }, 'the default export is a string (loop)'],
    [
      { default: { model: scriptedModel([]) }, goal: 42 },
      'the exported goal must be a non-empty string, got a number (42)',
    ],
    [{ default: { model: scriptedModel([]) }, goal: '  ' }, 'the exported goal must be a non-empty string'],
    [{ default: { run: () => undefined } }, 'the default export is a loop without its config'],
  ])('refuses %j', (exports, message) => {
    expect(() => loopOfModule(exports, 'm.js')).toThrow(message);
    try {
      loopOfModule(exports, 'm.js');
    } catch (error) {
      expect(error).toBeInstanceOf(CliError);
      expect(error).toMatchObject({ code: 'cli_loop_file', exitCode: 3 });
    }
  });
});

describe('sourceMapsRead', () => {
  it('is true under --enable-source-maps, a debugger (flag or NODE_OPTIONS) or V8 coverage, else false', () => {
    const read = (execArgv: string[], env: Record<string, string>, sourceMapsEnabled = false) =>
      sourceMapsRead({ sourceMapsEnabled, execArgv, env });
    expect(read([], {})).toBe(false);
    expect(read([], {}, true)).toBe(true);
    for (const flag of ['--inspect', '--inspect-brk', '--inspect-wait', '--inspect=127.0.0.1:9230', '--inspect-brk=0'])
      expect(read(['--no-warnings', flag], {})).toBe(true);
    expect(read([], { NODE_OPTIONS: '--max-old-space-size=4096 --inspect-wait' })).toBe(true);
    expect(read([], { NODE_V8_COVERAGE: '/tmp/coverage' })).toBe(true);
    expect(read(['--inspect-port=9230'], { NODE_OPTIONS: '--no-warnings', NODE_V8_COVERAGE: '' })).toBe(false);
  });
});

describe('loadLoopFile', () => {
  it('names a missing file, a directory and an unsupported extension', async () => {
    await expect(loadLoopFile('nope.ts', directory)).rejects.toThrow('no such loop file: nope.ts');
    await expect(loadLoopFile('.', directory)).rejects.toThrow('no such loop file: .');
    writeFileSync(join(directory, 'loop.cjs'), 'module.exports = {};');
    await expect(loadLoopFile('loop.cjs', directory)).rejects.toThrow(
      'loop.cjs is not a JavaScript or TypeScript module (.js, .mjs, .ts, .mts), got ".cjs"',
    );
  });

  it('imports a .mjs file relative to the directory given', async () => {
    writeFileSync(
      join(directory, 'loop.mjs'),
      "export const goal = 'Hi';\nexport default { model: { id: 'm', generate: async () => ({ text: 'hi', toolCalls: [] }) } };\n",
    );
    const loaded = await loadLoopFile('loop.mjs', directory);
    expect(loaded).toMatchObject({ goal: 'Hi', loop: undefined, path: join(directory, 'loop.mjs') });
  });

  it('says where to install loopstate when the loop file cannot find it, and which package the file is in', () => {
    // Node's own error, from a process of its own (vitest resolves loopstate for the modules it imports).
    const project = join(directory, 'other-package');
    mkdirSync(project);
    writeFileSync(join(project, 'package.json'), JSON.stringify({ name: 'not-loopstate', type: 'module' }));
    writeFileSync(join(project, 'loop.mjs'), "import { createLoop } from 'loopstate/testing';\nexport default 1;\n");
    writeFileSync(join(project, 'other.mjs'), "import 'no-such-package-here';\nexport default 1;\n");
    const nodeError = (file: string) => {
      const child = spawnSync(
        process.execPath,
        [
          '--input-type=module',
          '-e',
          `import(${JSON.stringify(pathToFileURL(join(project, file)).href)}).catch((e) => console.log(JSON.stringify({ code: e.code, message: e.message })));`,
        ],
        { encoding: 'utf8' },
      );
      return Object.assign(new Error(), JSON.parse(child.stdout) as { code: string; message: string });
    };
    const missing = nodeError('loop.mjs');
    expect(missing).toMatchObject({ code: 'ERR_MODULE_NOT_FOUND' });
    expect(missingLoopstateHint(missing, join(project, 'loop.mjs'))).toBe(
      `; install loopstate for it (npm install loopstate); the file is in the package of ${join(project, 'package.json')} ("not-loopstate"), where loopstate is not installed`,
    );
    expect(missingLoopstateHint(nodeError('other.mjs'), join(project, 'other.mjs'))).toBe('');
    expect(missingLoopstateHint(new Error("Cannot find package 'loopstate'"), join(project, 'loop.mjs'))).toBe('');
  });

  it('evaluates a TypeScript file once a process, as import() does', async () => {
    const counter = '__loopstateLoadLoopFileTest';
    const file = join(directory, 'counted.ts');
    writeFileSync(
      file,
      `const g = globalThis as unknown as Record<string, number>;\ng['${counter}'] = (g['${counter}'] ?? 0) + 1;\n` +
        "export const goal: string = 'Hi';\n" +
        "export default { model: { id: 'm', generate: async () => ({ text: 'hi', toolCalls: [] }) } };\n",
    );
    const first = await loadLoopFile('counted.ts', directory);
    const second = await loadLoopFile(file);
    expect(first.goal).toBe('Hi');
    expect(second.config).toBe(first.config);
    expect((globalThis as unknown as Record<string, number>)[counter]).toBe(1);
  });
});
