/** `loopstate console` and `loopstate runs`: help, and the bad arguments refused before anything is opened. */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { createLoop } from 'loopstate';
import { connectMcp } from 'loopstate/mcp';
import { sqliteStore } from 'loopstate/sqlite';
import config from '../../../../test/fixtures/console/refund-loop.js';
import { eventsFileIn, orderDeskTarget, serverEvents } from '../../../../test/support/mcp-stdio.js';
import { runCli } from '../run-cli.js';

const LOOP_FILE = resolve('test/fixtures/console/refund-loop.ts');
const MCP_LOOP_FILE = resolve('test/fixtures/console/mcp-loop.ts');
const directory = mkdtempSync(join(tmpdir(), 'loopstate-console-command-'));
afterAll(() => rmSync(directory, { recursive: true, force: true }));

async function cli(...args: string[]): Promise<{ code: number; out: string; err: string }> {
  const out: string[] = [];
  const err: string[] = [];
  const stop = new AbortController();
  stop.abort();
  const code = await runCli(
    args,
    { out: (text) => out.push(text), err: (text) => err.push(text), cwd: directory },
    { stop: stop.signal },
  );
  return { code, out: out.join('\n'), err: err.join('\n') };
}

describe('loopstate console and runs arguments', () => {
  it('help: the top-level usage names both commands, and each has its own', async () => {
    expect((await cli('--help')).out).toMatch(/runs <loop file> --store S[\s\S]*console <loop file> --store S/);
    const runsHelp = await cli('help', 'runs');
    expect(runsHelp.code).toBe(0);
    expect(runsHelp.out).toContain('Usage: loopstate runs <loop file> --store');
    const consoleHelp = await cli('console', '--help');
    expect(consoleHelp.code).toBe(0);
    expect(consoleHelp.out).toContain('Usage: loopstate console <loop file> --store');
  });

  it.each([
    [['console'], '<loop file>'],
    [['console', LOOP_FILE], '--store'],
    [['console', LOOP_FILE, '--store', 'missing.db'], '--store: no such SQLite file: missing.db'],
    [['console', LOOP_FILE, '--store', 'x.db', '--port', '70000'], '--port: expected a port number'],
    [['console', LOOP_FILE, 'extra', '--store', 'x.db'], 'unexpected argument "extra"'],
    [['runs'], '<loop file>'],
    [['runs', LOOP_FILE, 'list'], '--store'],
    [['runs', LOOP_FILE, '--store', 'x.db'], '<command>'],
    [['runs', LOOP_FILE, '--store', 'x.db', 'purge', 'r1'], 'unknown command "purge"'],
    [['runs', LOOP_FILE, '--store', 'x.db', 'list', '--limit', '0'], '--limit'],
    [['runs', LOOP_FILE, '--store', 'x.db', 'show'], 'show: expected <runId>'],
    [['runs', LOOP_FILE, '--store', 'x.db', 'approve', 'r1'], 'approve: expected <callId>\n'],
    [['runs', LOOP_FILE, '--store', 'x.db', 'approve'], 'approve: expected <runId> <callId>\n'],
    [['runs', LOOP_FILE, '--store', 'x.db', 'reject', 'r1', '--reason', 'no'], 'reject: expected <callId>\n'],
    [['runs', LOOP_FILE, '--store', 'x.db', 'cancel'], 'cancel: expected <runId>\n'],
    [
      ['runs', LOOP_FILE, '--store', 'x.db', 'approve', 'r1', 'c1', '--reason', 'ok'],
      '--reason: an approval takes no reason',
    ],
    [
      ['runs', LOOP_FILE, '--store', 'x.db', 'review', 'r1', '--accept', '--reject'],
      'exactly one of --accept and --reject',
    ],
    [['runs', LOOP_FILE, '--store', 'x.db', 'list', '--bogus'], "Unknown option '--bogus'"],
    [['runs', LOOP_FILE, '--store', 'x.db', '--schema', 'ops', 'list'], '--schema: only for a Postgres store'],
    [['console', LOOP_FILE, '--store', 'x.db', '--schema', 'ops'], '--schema: only for a Postgres store'],
    [
      ['runs', LOOP_FILE, '--store', 'postgres://nobody@127.0.0.1:1/none', '--schema', 'Ops-1', 'list'],
      '--schema: expected a lower-case Postgres identifier (a-z, 0-9, _), got "Ops-1"',
    ],
  ])('%j exits 2 naming %s', async (args, named) => {
    const { code, err } = await cli(...args);
    expect(code).toBe(2);
    expect(err).toContain(named);
  });

  it("a decision starts the loop file's MCP servers, whose tools the run was started with, and closes them", async () => {
    process.env.MCP_EVENTS = eventsFileIn();
    const { writeFileSync } = await import('node:fs');
    writeFileSync(join(directory, 'mcp.db'), '');
    const store = sqliteStore({ path: join(directory, 'mcp.db') });
    const desk = await connectMcp(orderDeskTarget(process.env.MCP_EVENTS));
    const loop = createLoop({ ...config, tools: [...config.tools, ...desk.tools], store });
    expect((await loop.run({ goal: 'Refund order O-4', runId: 'mcp-run' })).stopReason).toBe('needs_human');
    await desk.close();
    await store.close();
    const closedBefore = serverEvents(process.env.MCP_EVENTS).filter((event) => event === 'stdin-closed').length;
    const listed = await cli('runs', MCP_LOOP_FILE, '--store', 'mcp.db', 'list');
    expect(listed.code, listed.err).toBe(0);
    // Listing reads the store only: no server was started for it.
    expect(serverEvents(process.env.MCP_EVENTS).filter((event) => event === 'stdin-closed')).toHaveLength(closedBefore);
    const approved = await cli('runs', MCP_LOOP_FILE, '--store', 'mcp.db', 'approve', 'mcp-run', 'call-O-4');
    expect(approved.err).toBe('');
    expect(approved.code).toBe(0);
    expect(approved.out).toContain('run mcp-run: succeeded (completed)');
    expect(serverEvents(process.env.MCP_EVENTS).filter((event) => event === 'stdin-closed')).toHaveLength(
      closedBefore + 1,
    );
  });

  it('a loop file that cannot be loaded exits 3', async () => {
    const { writeFileSync } = await import('node:fs');
    writeFileSync(join(directory, 'x.db'), '');
    const { code, err } = await cli('runs', 'no-such-loop.ts', '--store', 'x.db', 'list');
    expect(code).toBe(3);
    expect(err).toContain('no such loop file: no-such-loop.ts');
  });
});
