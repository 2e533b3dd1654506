import { spawn } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { sampleLoopConfig, writeSampleTrace } from '../../../../test/support/sample-run.js';
import { createLoop } from '../../../index.js';
import { virtualClock } from '../../../testing/index.js';
import { runCli } from '../run-cli.js';

const repoRoot = resolve(dirname(fileURLToPath(import.meta.url)), '../../../..');
let directory: string;
let tracePath: string;
beforeAll(async () => {
  directory = mkdtempSync(join(tmpdir(), 'loopstate-inspect-cli-'));
  tracePath = join(directory, 'run.jsonl');
  await writeSampleTrace(tracePath);
});
afterAll(() => rmSync(directory, { recursive: true, force: true }));

function io() {
  const out: string[] = [];
  const err: string[] = [];
  return { out, err, io: { out: (text: string) => out.push(text), err: (text: string) => err.push(text) } };
}

describe('loopstate inspect', () => {
  it('serves the page on 127.0.0.1, prints its URL, and stops when told', async () => {
    const { out, err, io: cliIo } = io();
    const controller = new AbortController();
    const exit = runCli(['inspect', tracePath, '--port', '0'], cliIo, { stop: controller.signal });
    await expect.poll(() => out.length, { timeout: 15_000 }).toBe(2);
    expect(out[0]).toBe('loopstate inspect: run run-sample (3 steps, 9 events, completed)');
    const url = /Viewer: (http:\/\/127\.0\.0\.1:\d+\/)/.exec(out[1] ?? '')?.[1];
    expect(url).toBeDefined();
    const page = await fetch(url!);
    expect(page.headers.get('content-security-policy')).toContain("default-src 'none'");
    const html = await page.text();
    expect(html).toContain('<svg id="statechart"');
    expect(html).not.toMatch(/(src|href)="https?:/);
    const timeline = (await (await fetch(new URL('timeline.json', url))).json()) as { frames: unknown[] };
    expect(timeline.frames).toHaveLength(10);
    expect((await fetch(new URL('nope', url))).status).toBe(404);
    controller.abort();
    expect(await exit).toBe(0);
    expect(err).toEqual([]);
  });

  it('names the line and field of a bad trace line and shows the rest; refuses a trace with nothing to show', async () => {
    const bad = join(directory, 'bad.jsonl');
    writeFileSync(bad, readFileSync(tracePath, 'utf8').replace('"from":"READY"', '"from":null'));
    const { out, err, io: cliIo } = io();
    expect(await runCli(['inspect', bad], cliIo, { stop: AbortSignal.abort() })).toBe(0);
    expect(err).toEqual([
      `loopstate inspect: ${bad}: trace line 3, field from: Invalid input: expected string, received null (the line was skipped)`,
    ]);
    // The skipped line was the run's first transition; the machine events it follows still replay every frame.
    expect(out[0]).toBe('loopstate inspect: run run-sample (3 steps, 9 events, completed)');
    const empty = join(directory, 'unreadable.jsonl');
    writeFileSync(empty, '{"type":"run-start"}\n');
    const refused = io();
    expect(await runCli(['inspect', empty], refused.io, { stop: AbortSignal.abort() })).toBe(1);
    expect(refused.err).toEqual([
      `loopstate inspect: ${empty}: no trace events it can read (trace line 1, field runId: Invalid input: expected string, received undefined)`,
    ]);
    expect(refused.out).toEqual([]);
  });

  it('opens the latest run of a file that two runs appended to, and lists the other with how to open it', async () => {
    const appended = join(directory, 'appended.jsonl');
    // Two runs of one loop whose trace.file is the same: the second appends to the first.
    for (const runId of ['morning', 'evening']) {
      await createLoop(sampleLoopConfig(virtualClock(), { trace: { file: appended }, generateRunId: () => runId })).run(
        { goal: 'What is the status of order O-101?' },
      );
    }
    const morningEvents = readFileSync(appended, 'utf8')
      .split('\n')
      .filter((line) => line.includes('"runId":"morning"')).length;
    const latest = io();
    const controller = new AbortController();
    const exit = runCli(['inspect', appended], latest.io, { stop: controller.signal });
    await expect.poll(() => latest.out.length, { timeout: 15_000 }).toBe(3);
    expect(latest.out[0]).toBe('loopstate inspect: run evening (3 steps, 9 events, completed)');
    expect(latest.out[1]).toBe(
      `the latest of 2 runs in this file; the others, in the order they began:\n  morning  (completed, ${morningEvents} events)\nopen one with: loopstate inspect ${appended} --run <id>`,
    );
    const timeline = (await (
      await fetch(new URL('timeline.json', /Viewer: (\S+)/.exec(latest.out[2] ?? '')?.[1]))
    ).json()) as { runId: string; notices: string[] };
    expect(timeline.runId).toBe('evening');
    expect(timeline.notices).toContain(
      'the file holds 2 runs; this is the latest (the last to begin in the file); open another with --run <id>',
    );
    controller.abort();
    expect(await exit).toBe(0);

    const chosen = io();
    const second = new AbortController();
    const exitChosen = runCli(['inspect', appended, '--run', 'morning'], chosen.io, { stop: second.signal });
    await expect.poll(() => chosen.out.length, { timeout: 15_000 }).toBe(3);
    expect(chosen.out[0]).toMatch(/^loopstate inspect: run morning /);
    expect(chosen.out[1]).toContain('the other runs in this file, in the order they began:\n  evening  (completed, ');
    second.abort();
    expect(await exitChosen).toBe(0);
    expect([...latest.err, ...chosen.err]).toEqual([]);
  });

  it('says what is missing or wrong in the arguments', async () => {
    const missing = io();
    expect(await runCli(['inspect', join(directory, 'none.jsonl')], missing.io, { stop: AbortSignal.abort() })).toBe(1);
    expect(missing.err[0]).toContain('none.jsonl: no such file');
    const noFile = io();
    expect(await runCli(['inspect'], noFile.io, { stop: AbortSignal.abort() })).toBe(2);
    expect(noFile.err[0]).toContain('expected the trace file');
    const badPort = io();
    expect(await runCli(['inspect', tracePath, '--port', 'eighty'], badPort.io, { stop: AbortSignal.abort() })).toBe(2);
    expect(badPort.err[0]).toContain('--port: expected a port number');
  });

  it('the bin serves until Ctrl-C, then exits 0', async () => {
    const child = spawn(
      process.execPath,
      ['--import', './test/support/typescript-register.mjs', 'src/tooling/cli/bin.ts', 'inspect', tracePath],
      { cwd: repoRoot, stdio: ['ignore', 'pipe', 'pipe'] },
    );
    let output = '';
    child.stdout.on('data', (chunk) => (output += String(chunk)));
    child.stderr.on('data', (chunk) => (output += String(chunk)));
    const exited = new Promise<number | null>((done) => child.on('exit', (code) => done(code)));
    try {
      // Generous: the transpiling loader and the layout take seconds on a loaded machine.
      await expect.poll(() => /Viewer: (\S+)/.exec(output)?.[1], { timeout: 40_000, interval: 100 }).toBeDefined();
      const url = /Viewer: (\S+)/.exec(output)![1]!;
      expect((await fetch(url)).status).toBe(200);
      child.kill('SIGINT');
      expect(await exited).toBe(0);
    } finally {
      child.kill('SIGKILL');
    }
  }, 60_000);
});
