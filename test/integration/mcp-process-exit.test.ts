/**
 * A program that uses an MCP server's tools exits by itself whether it calls `close()` or forgets to,
 * and its stdio server goes with it (no process left, no zombie); over Streamable HTTP too.
 */
import { spawn } from 'node:child_process';
import { afterEach, describe, expect, it, vi } from 'vitest';
import { eventsFileIn, processState, repoRoot } from '../support/mcp-stdio.js';
import { startStreamableServer, type TestMcpServer } from '../support/mcp-http-servers.js';

const servers: TestMcpServer[] = [];
afterEach(async () => {
  await Promise.all(servers.splice(0).map((server) => server.close()));
});

/** Runs the child to its end (the test timeout bounds a child that never exits) and reads its report. */
function runChild(
  args: string[],
): Promise<{ code: number | null; report: { pid: number | null; stopReason: string } }> {
  const child = spawn(
    process.execPath,
    ['--import', './test/support/typescript-register.mjs', 'test/fixtures/mcp-exit-child.ts', ...args],
    { cwd: repoRoot, stdio: ['ignore', 'pipe', 'pipe'] },
  );
  let stdout = '';
  let stderr = '';
  child.stdout.on('data', (chunk: Buffer) => (stdout += chunk.toString()));
  child.stderr.on('data', (chunk: Buffer) => (stderr += chunk.toString()));
  return new Promise((resolve, reject) => {
    child.on('error', reject);
    child.on('exit', (code) => {
      try {
        resolve({ code, report: JSON.parse(stdout.trim()) as { pid: number | null; stopReason: string } });
      } catch {
        reject(new Error(`the child printed no report (exit ${String(code)}): ${stdout}${stderr}`));
      }
    });
  });
}

const endings = [
  ['forgets close()', 'forget'],
  ['calls close()', 'close'],
] as const;

// Each child transpiles the sources it runs: slow on a busy machine.
describe('a program using an MCP server', { timeout: 90_000 }, () => {
  it.each(endings)('exits by itself over stdio when it %s, and its server process is gone', async (_case, ending) => {
    const { code, report } = await runChild([ending, 'stdio', eventsFileIn()]);
    expect(code).toBe(0);
    expect(report.stopReason).toBe('completed');
    expect(report.pid).toEqual(expect.any(Number));
    await vi.waitFor(() => expect(processState(report.pid!)).toBe('gone'));
  });

  it.each(endings)('exits by itself over Streamable HTTP when it %s', async (_case, ending) => {
    const server = await startStreamableServer('tok_0123456789abcdef');
    servers.push(server);
    const { code, report } = await runChild([ending, 'http', server.url, 'tok_0123456789abcdef']);
    expect(code).toBe(0);
    expect(report.stopReason).toBe('completed');
  });
});
