/**
 * The cassette lock across processes, with real child processes (test/fixtures/cassette-recorder-child.ts):
 * a recorder in another live process refuses ours, naming its pid and host; killed with SIGKILL it
 * leaves a valid cassette and a stale lock that the next recorder takes over; exiting without close()
 * releases its lock. A child killed while it rewrites the cassette over and over leaves a whole one.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { existsSync, mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { hostname, tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { readCassette } from '../../src/adapters/cassette/cassette-format.js';
import { recordModel } from '../../src/adapters/cassette/record-model.js';
import type { ModelRequest } from '../../src/contracts/model.js';
import { reply, scriptedModel } from 'loopstate/testing';

let folder: string;
let path: string;
const children: ChildProcess[] = [];
beforeEach(() => {
  folder = mkdtempSync(join(tmpdir(), 'loopstate-cassette-process-'));
  path = join(folder, 'run.json');
});
afterEach(() => {
  for (const child of children.splice(0))
    if (child.exitCode === null && child.signalCode === null) child.kill('SIGKILL');
  rmSync(folder, { recursive: true, force: true });
});

const ask = (content: string): ModelRequest => ({
  messages: [{ role: 'user', content }],
  tools: [],
  signal: new AbortController().signal,
});

/** Starts the child recorder and resolves once it has recorded its first call. */
async function startRecorder(
  mode: 'hold' | 'spin',
): Promise<{ child: ChildProcess; exited: Promise<NodeJS.Signals | number | null> }> {
  const child = spawn(
    process.execPath,
    [
      '--import',
      './test/support/typescript-register.mjs',
      join('test', 'fixtures', 'cassette-recorder-child.ts'),
      mode,
      path,
    ],
    { stdio: ['pipe', 'pipe', 'pipe'] },
  );
  children.push(child);
  let stderr = '';
  child.stderr?.on('data', (chunk: Buffer) => (stderr += chunk.toString()));
  const exited = new Promise<NodeJS.Signals | number | null>((resolve) =>
    child.on('exit', (code, signal) => resolve(signal ?? code)),
  );
  await new Promise<void>((resolve, reject) => {
    child.stdout?.on('data', (chunk: Buffer) => chunk.toString().includes('recorded') && resolve());
    void exited.then((outcome) =>
      reject(new Error(`the child exited (${String(outcome)}) before recording: ${stderr}`)),
    );
  });
  return { child, exited };
}

describe('the cassette lock across processes', () => {
  it('refuses our recorder while another process records the cassette; after that process is killed, takes its stale lock over', async () => {
    const { child, exited } = await startRecorder('hold');
    const inner = scriptedModel([reply('ours')]);
    await expect(recordModel(inner, path).generate(ask('first'))).rejects.toMatchObject({
      name: 'CassetteFileError',
      code: 'cassette_locked',
      path,
      message: expect.stringContaining(
        `cassette ${path}: is being recorded already: pid ${child.pid} on host ${hostname()} has held it since`,
      ),
    });
    expect(inner.calls).toHaveLength(0);

    child.kill('SIGKILL');
    expect(await exited).toBe('SIGKILL');
    // Killed: no exit handler ran, so its lock is still there, and its cassette is whole.
    expect(JSON.parse(readFileSync(`${path}.lock`, 'utf8'))).toMatchObject({ pid: child.pid });
    expect(readCassette(path).calls.map((call) => call.response?.text)).toEqual(['answer 1']);

    const ours = recordModel(scriptedModel([reply('ours')]), path);
    await ours.generate(ask('first'));
    expect(JSON.parse(readFileSync(`${path}.lock`, 'utf8'))).toMatchObject({ pid: process.pid });
    expect(readCassette(path).calls.map((call) => call.response?.text)).toEqual(['ours']);
    ours.close();
  }, 30_000);

  it('releases the lock when the recording process exits without close()', async () => {
    const { child, exited } = await startRecorder('hold');
    expect(existsSync(`${path}.lock`)).toBe(true);
    child.stdin?.write('exit\n');
    expect(await exited).toBe(0);
    expect(existsSync(`${path}.lock`)).toBe(false);
    expect(readCassette(path).calls).toHaveLength(1);
  }, 30_000);

  it('leaves a whole cassette when the recorder is killed while it rewrites it', async () => {
    const { child, exited } = await startRecorder('spin');
    // Wait (on the real clock: this is another process) until it has rewritten the cassette many times.
    const started = Date.now();
    while (readCassette(path).calls.length < 200) {
      if (Date.now() - started > 20_000) throw new Error('the child recorded fewer than 200 calls in 20 s');
      await new Promise((resolve) => setTimeout(resolve, 10));
    }
    child.kill('SIGKILL');
    expect(await exited).toBe('SIGKILL');
    const calls = readCassette(path).calls;
    expect(calls.length).toBeGreaterThanOrEqual(200);
    expect(calls.map((call) => call.response?.text)).toEqual(calls.map((_, index) => `answer ${index + 1}`));
  }, 30_000);
});
