import { describe, expect, it } from 'vitest';
import { mcpExportEntries, mcpFlagEntries, splitCommandLine } from './mcp-servers.js';

describe('splitCommandLine', () => {
  it('splits words as a shell does for quotes and escapes, running nothing', () => {
    expect(splitCommandLine(`node "my server.js" --name 'a b' x\\ y ""`)).toEqual([
      'node',
      'my server.js',
      '--name',
      'a b',
      'x y',
      '',
    ]);
    expect(splitCommandLine(`echo "say \\"hi\\"" '$HOME' \`ls\``)).toEqual(['echo', 'say "hi"', '$HOME', '`ls`']);
    expect(() => splitCommandLine(`node 'server.js`)).toThrow("unclosed ' quote");
  });
});

describe('the servers of loopstate run', () => {
  it('reads --mcp values as stdio command lines', () => {
    expect(mcpFlagEntries(['npx -y @modelcontextprotocol/server-everything'])).toEqual([
      {
        target: { command: 'npx', args: ['-y', '@modelcontextprotocol/server-everything'] },
        options: {},
        source: '--mcp "npx -y @modelcontextprotocol/server-everything"',
      },
    ]);
    expect(() => mcpFlagEntries(['  '])).toThrow(expect.objectContaining({ code: 'cli_usage' }));
  });

  it("reads the loop file's mcp export: targets, or [target, options]", () => {
    expect(mcpExportEntries(undefined, 'loop.ts')).toEqual([]);
    expect(
      mcpExportEntries([{ url: 'http://127.0.0.1:1/mcp' }, [{ command: 'node' }, { exclude: ['x'] }]], 'loop.ts'),
    ).toEqual([
      { target: { url: 'http://127.0.0.1:1/mcp' }, options: {}, source: 'loop.ts mcp[0]' },
      { target: { command: 'node' }, options: { exclude: ['x'] }, source: 'loop.ts mcp[1]' },
    ]);
    expect(() => mcpExportEntries({ command: 'node' }, 'loop.ts')).toThrow(/loop\.ts: export mcp: expected a list/);
    expect(() => mcpExportEntries(['node server.js'], 'loop.ts')).toThrow(/export mcp\[0\]/);
  });
});
