/**
 * One recorder per cassette, in this process: a second recorder of the same path is refused before
 * its call reaches its model, a stale lock is taken over, and a recorder that lost its lock stops
 * writing rather than replace another's calls. The same across processes: test/integration/cassette-lock-process.test.ts.
 */
import { spawnSync } from 'node:child_process';
import { existsSync, mkdtempSync, readFileSync, rmSync, symlinkSync, writeFileSync } from 'node:fs';
import { hostname, tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { createLoop } from '../../index.js';
import type { ModelRequest } from '../../contracts/model.js';
import { reply, scriptedModel, virtualClock } from '../../testing/index.js';
import { readCassette } from './cassette-format.js';
import { recordModel } from './record-model.js';

let folder: string;
let path: string;
beforeEach(() => {
  folder = mkdtempSync(join(tmpdir(), 'loopstate-cassette-lock-'));
  path = join(folder, 'run.json');
});
afterEach(() => rmSync(folder, { recursive: true, force: true }));

const ask = (content: string): ModelRequest => ({
  messages: [{ role: 'user', content }],
  tools: [],
  signal: new AbortController().signal,
});
const lockFile = () =>
  JSON.parse(readFileSync(`${path}.lock`, 'utf8')) as { pid: number; host: string; token: string; since: string };

/** The pid of a process that ran and is gone. */
function deadPid(): number {
  const child = spawnSync(process.execPath, ['-e', 'process.stdout.write(String(process.pid))'], { encoding: 'utf8' });
  return Number(child.stdout);
}

describe('the cassette lock', () => {
  it('refuses a second recorder of the same cassette in this process, before its call reaches its model', async () => {
    const first = recordModel(scriptedModel([reply('one'), reply('two')]), path);
    await first.generate(ask('first'));
    expect(lockFile()).toMatchObject({ pid: process.pid, host: hostname() });

    const secondInner = scriptedModel([reply('never')]);
    const second = createLoop({ model: recordModel(secondInner, path), clock: virtualClock() });
    const result = await second.run({ goal: 'Go.' });
    expect(result.stopReason).toBe('fatal_error');
    expect(result.error).toMatchObject({ name: 'CassetteFileError', code: 'cassette_locked' });
    expect(result.error?.message).toMatch(
      new RegExp(
        `^cassette ${path}: is being recorded already: another recordModel in this process \\(pid ${process.pid}\\) has held it since \\d{4}-\\d\\d-\\d\\dT[^;]+; close\\(\\) that recorder first$`,
      ),
    );
    expect(secondInner.calls).toHaveLength(0);

    // The first recorder's cassette is intact and it records on.
    await first.generate(ask('second'));
    expect(readCassette(path).calls).toHaveLength(2);
    first.close();
    expect(existsSync(`${path}.lock`)).toBe(false);

    // Closed, the cassette is free: a new recorder replaces it.
    const third = recordModel(scriptedModel([reply('three')]), path);
    await third.generate(ask('third'));
    expect(readCassette(path).calls.map((call) => call.response?.text)).toEqual(['three']);
    third.close();
  });

  it("fails a closed recorder's later calls, naming the path", async () => {
    const recording = recordModel(scriptedModel([reply('one'), reply('two')]), path);
    await recording.generate(ask('first'));
    recording.close();
    await expect(recording.generate(ask('second'))).rejects.toMatchObject({
      code: 'cassette_write_failed',
      message: `cassette ${path}: its recorder was closed; create a new recordModel to record again`,
    });
    expect(readCassette(path).calls).toHaveLength(1);
  });

  it('takes over a lock whose holder on this host is gone', async () => {
    const gone = deadPid();
    writeFileSync(
      `${path}.lock`,
      JSON.stringify({ pid: gone, host: hostname(), token: 'f'.repeat(32), since: '2026-01-01T00:00:00.000Z' }),
    );
    const recording = recordModel(scriptedModel([reply('one')]), path);
    await recording.generate(ask('first'));
    expect(lockFile()).toMatchObject({ pid: process.pid, host: hostname() });
    expect(readCassette(path).calls).toHaveLength(1);
    recording.close();
  });

  it("takes over a lock with this process's pid that this process does not hold (a container restarted with the same pid)", async () => {
    writeFileSync(
      `${path}.lock`,
      JSON.stringify({ pid: process.pid, host: hostname(), token: 'e'.repeat(32), since: '2026-01-01T00:00:00.000Z' }),
    );
    const recording = recordModel(scriptedModel([reply('one')]), path);
    await recording.generate(ask('first'));
    expect(lockFile().token).not.toBe('e'.repeat(32));
    recording.close();
  });

  it('never takes over a lock held on another host, and names that host', async () => {
    writeFileSync(
      `${path}.lock`,
      JSON.stringify({
        pid: deadPid(),
        host: 'build-agent-7',
        token: 'd'.repeat(32),
        since: '2026-01-01T00:00:00.000Z',
      }),
    );
    const inner = scriptedModel([reply('one')]);
    await expect(recordModel(inner, path).generate(ask('first'))).rejects.toMatchObject({
      code: 'cassette_locked',
      message: expect.stringMatching(
        /^cassette .*run\.json: is being recorded already: pid \d+ on host build-agent-7 has held it since 2026-01-01T00:00:00\.000Z \(.*run\.json\.lock\); stop that recorder, or delete the lock file if that process is gone$/,
      ),
    });
    expect(inner.calls).toHaveLength(0);
  });

  it('refuses a lock file planted as a link, without reading or touching its target', async () => {
    const victim = join(folder, 'victim.txt');
    writeFileSync(victim, JSON.stringify({ pid: deadPid(), host: hostname(), token: 'c'.repeat(32), since: 'then' }));
    symlinkSync(victim, `${path}.lock`);
    await expect(recordModel(scriptedModel([reply('one')]), path).generate(ask('first'))).rejects.toMatchObject({
      code: 'cassette_locked',
      message: expect.stringContaining(
        `another recorder holds ${path}.lock (it names no holder); delete that file if no recorder is running`,
      ),
    });
    expect(JSON.parse(readFileSync(victim, 'utf8'))).toMatchObject({ token: 'c'.repeat(32) });
  });

  it("stops writing, naming the new holder, when its lock was taken from it: the other recorder's cassette survives", async () => {
    const recording = recordModel(scriptedModel([reply('one'), reply('two')]), path);
    await recording.generate(ask('first'));
    // Someone deleted the lock by hand and another recorder (pid 4242 on another host) wrote its own cassette.
    writeFileSync(
      `${path}.lock`,
      JSON.stringify({ pid: 4242, host: 'other-host', token: 'b'.repeat(32), since: '2026-01-01T00:00:00.000Z' }),
    );
    const theirs = readFileSync(path, 'utf8').replace('"first"', '"theirs"');
    writeFileSync(path, theirs);
    await expect(recording.generate(ask('second'))).rejects.toMatchObject({
      code: 'cassette_locked',
      message: expect.stringContaining('lost its lock while recording (pid 4242 on host other-host has held it since'),
    });
    expect(readFileSync(path, 'utf8')).toBe(theirs);
    recording.close();
    expect(lockFile().token).toBe('b'.repeat(32));
  });
});
