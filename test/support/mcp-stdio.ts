/**
 * Starting the order-desk MCP server (test/support/mcp-server.mjs) as a real stdio child for the
 * `loopstate/mcp` tests, and reading the events it wrote to its file.
 */
import { existsSync, mkdtempSync, readFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import type { McpStdioTarget } from 'loopstate/mcp';

export const repoRoot = resolve(fileURLToPath(new URL('../..', import.meta.url)));

/** The server's command line: plain JavaScript, so it starts without the TypeScript hooks. */
export function orderDeskTarget(eventsFile: string, env: Record<string, string> = {}): McpStdioTarget {
  return {
    command: process.execPath,
    args: ['test/fixtures/mcp-stdio-server.mjs'],
    cwd: repoRoot,
    env: { MCP_EVENTS: eventsFile, ...env },
  };
}

export function eventsFileIn(): string {
  return join(mkdtempSync(join(tmpdir(), 'loopstate-mcp-')), 'events.log');
}

export function serverEvents(eventsFile: string): string[] {
  return existsSync(eventsFile) ? readFileSync(eventsFile, 'utf8').split('\n').filter(Boolean) : [];
}

/** Whether a process with this pid runs, has exited but was not reaped (a zombie), or is gone. */
export function processState(pid: number): 'running' | 'zombie' | 'gone' {
  try {
    process.kill(pid, 0);
  } catch {
    return 'gone';
  }
  try {
    // /proc/<pid>/stat: "pid (name) state ..."; the name may hold spaces, the state follows its last ")".
    const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
    return stat.slice(stat.lastIndexOf(')') + 2).startsWith('Z') ? 'zombie' : 'running';
  } catch {
    return 'gone';
  }
}
