/**
 * A process killed mid-run leaves a readable trace file: every complete line parses, at most the
 * last one is cut, and the reader says which. The child runs a loop bundled from the sources with
 * vite (so the test needs no earlier build), and is killed with SIGKILL while it writes.
 */
import { spawn } from 'node:child_process';
import { appendFileSync, existsSync, mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { bundleForNode } from '../support/bundle-for-node.js';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { rebuildRun } from 'loopstate';
import { readTraceFile } from 'loopstate/node';

const directory = mkdtempSync(join(tmpdir(), 'loopstate-kill-'));
const child = join(directory, 'trace-kill-child.mjs');
afterAll(() => rmSync(directory, { recursive: true, force: true }));

beforeAll(async () => {
  // One self-contained file: it runs from a temp directory with no node_modules.
  await bundleForNode({
    entry: fileURLToPath(new URL('../fixtures/trace-kill-child.ts', import.meta.url)),
    outDir: directory,
    fileName: 'trace-kill-child.mjs',
    selfContained: true,
  });
}, 120_000);

function lineCount(file: string): number {
  return existsSync(file) ? readFileSync(file, 'utf8').split('\n').length - 1 : 0;
}

describe('a run killed mid-way', () => {
  it('leaves a trace file whose every complete line parses', async () => {
    const file = join(directory, 'killed.jsonl');
    const process_ = spawn(process.execPath, [child, file], { stdio: ['ignore', 'ignore', 'pipe'] });
    let stderr = '';
    process_.stderr.on('data', (chunk: Buffer) => (stderr += chunk.toString()));
    const exited = new Promise<NodeJS.Signals | number | null>((resolve) =>
      process_.on('exit', (code, signal) => resolve(signal ?? code)),
    );
    // Wait (on the real clock: this is another process) until it is well into the run.
    const started = Date.now();
    while (lineCount(file) < 60) {
      if (process_.exitCode !== null) throw new Error(`the child exited early: ${stderr}`);
      if (Date.now() - started > 30_000) throw new Error(`the child wrote ${lineCount(file)} lines in 30 s: ${stderr}`);
      await new Promise((resolve) => setTimeout(resolve, 20));
    }
    process_.kill('SIGKILL');
    expect(await exited).toBe('SIGKILL');

    const { events, truncatedLine } = readTraceFile(file);
    expect(events.length).toBeGreaterThanOrEqual(60);
    expect(events[0]).toMatchObject({ type: 'run-start', modelId: 'kill-test-model' });
    expect(events.some((event) => event.type === 'run-end')).toBe(false);
    // A write is one whole line, so a kill between writes leaves none cut; if one was, it is the last.
    if (truncatedLine !== null) expect(truncatedLine.line).toBe(events.length + 1);
    const rebuilt = rebuildRun(events);
    expect(rebuilt).toMatchObject({ stopReason: null, status: null, modelId: 'kill-test-model' });
    expect(rebuilt.steps).toBeGreaterThan(5);
    expect(rebuilt.usage.inputTokens).toBe(rebuilt.steps * 10);

    // A line cut by the kill (simulated: the kernel rarely cuts one write) is named, not thrown.
    appendFileSync(file, '{"type":"step-end","runId":"');
    const cut = readTraceFile(file);
    expect(cut.events).toEqual(events);
    expect(cut.truncatedLine).toEqual({ line: events.length + 1, text: '{"type":"step-end","runId":"' });
  }, 60_000);
});
