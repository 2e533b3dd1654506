/**
 * Each command's module is imported when that command runs, not when the CLI starts: `loopstate verify` (run in
 * pre-commit hooks) loads no model adapter, store, cassette, MCP client, console or viewer. Every mock below is the
 * real module, recorded when it is first imported (a `vi.mock` factory runs on the module's first import).
 */
import { describe, expect, it, vi } from 'vitest';

const imported = vi.hoisted(() => new Set<string>());

vi.mock('./run-command.js', async (original) => (imported.add('run-command'), original()));
vi.mock('./verify-command.js', async (original) => (imported.add('verify-command'), original()));
vi.mock('./commands/inspect.js', async (original) => (imported.add('inspect'), original()));
vi.mock('./commands/learning.js', async (original) => (imported.add('learning'), original()));
vi.mock('./commands/runs.js', async (original) => (imported.add('runs'), original()));
vi.mock('./commands/console.js', async (original) => (imported.add('console'), original()));
vi.mock('../../adapters/openai/index.js', async (original) => (imported.add('openai'), original()));
vi.mock('../../adapters/cassette/index.js', async (original) => (imported.add('cassette'), original()));
vi.mock('../../adapters/sqlite/index.js', async (original) => (imported.add('sqlite'), original()));
vi.mock('../../adapters/postgres/index.js', async (original) => (imported.add('postgres'), original()));
// The engine (~240 modules): `--version`, `--help` and a usage error do without it.
vi.mock('../../internal.js', async (original) => (imported.add('internal'), original()));
vi.mock('../../adapters/mcp/index.js', async (original) => (imported.add('mcp'), original()));

const { runCli } = await import('./run-cli.js');

async function cli(argv: string[]) {
  const lines: string[] = [];
  const io = { out: (text: string) => lines.push(text), err: (text: string) => lines.push(text), env: {} };
  return { code: await runCli(argv, io), text: lines.join('\n') };
}

describe('the CLI imports a command when it runs', () => {
  it('starts with no command module loaded, and loads only verify for verify', async () => {
    expect([...imported]).toEqual([]);
    const version = await cli(['--version']);
    expect(version.code).toBe(0);
    expect(version.text).toMatch(/^\d+\.\d+\.\d+/);
    // Nor the engine (`loopstate/internal`) for the CLI's own help, or a command it does not know.
    const usage = await cli(['--help']);
    expect(usage.code).toBe(0);
    expect(usage.text).toMatch(/^Usage: loopstate/);
    const unknown = await cli(['no-such-command']);
    expect(unknown.code).toBe(2);
    expect([...imported]).toEqual([]);
    const help = await cli(['verify', '--help']);
    expect(help.code).toBe(0);
    expect(help.text).toMatch(/^Usage: loopstate verify/);
    expect([...imported]).toEqual(['verify-command', 'internal']);
    // A bad argument is reported by the module it loaded, as before.
    const bad = await cli(['verify', '--max-states', 'many', 'loop.ts']);
    expect(bad.code).toBe(2);
    expect(bad.text).toContain('--max-states expects a positive whole number');
    expect([...imported]).toEqual(['verify-command', 'internal']);
  });

  it('loads each other command (and what it needs) when that command runs', async () => {
    for (const [command, modules] of [
      ['run', ['run-command', 'openai', 'cassette', 'mcp']],
      ['learning', ['learning', 'sqlite', 'postgres']],
      ['runs', ['runs']],
    ] as const) {
      const { code } = await cli([command, '--help']);
      expect(code, command).toBe(0);
      for (const name of modules) expect(imported, `${command} loads ${name}`).toContain(name);
    }
    const inspect = await cli(['inspect', '/nonexistent/loopstate-trace.jsonl']);
    expect(inspect.code).not.toBe(0);
    expect(imported).toContain('inspect');
    const unknown = await cli(['console', '--bogus']);
    expect(unknown.code).toBe(2);
    expect(imported).toContain('console');
  });
});
