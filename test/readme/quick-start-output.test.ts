/**
 * Keeps the README's quick start true: the output it shows for `npm start` is what `loopstate run
 * order-status` prints (run ids and millisecond timings aside).
 */
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { expect, it } from 'vitest';
import { runCli } from '../../src/tooling/cli/run-cli.js';

// Timings vary, and so does the padding before them in the tools table (a 12 ms latency is one column wider).
const normalize = (text: string) =>
  text
    .replace(/run_[a-z0-9]+_[a-z0-9]+/g, 'run_ID')
    .replace(/ +\d+ ms\b/g, ' N ms')
    .trimEnd();

it("the README's quick start shows what npm start prints", async () => {
  const readme = readFileSync(new URL('../../README.md', import.meta.url), 'utf8');
  const quickStart = readme.slice(readme.indexOf('## Quick start'), readme.indexOf('## The API in 30 seconds'));
  const shown = /```text\n([\s\S]*?)```/.exec(quickStart)?.[1];
  expect(shown).toBeDefined();
  const cwd = mkdtempSync(join(tmpdir(), 'loopstate-quick-start-'));
  try {
    const lines: string[] = [];
    const code = await runCli(['run', 'order-status'], {
      out: (text) => lines.push(text),
      err: (text) => lines.push(text),
      cwd,
    });
    expect(code).toBe(0);
    expect(normalize(lines.join('\n'))).toBe(normalize(shown ?? ''));
  } finally {
    rmSync(cwd, { recursive: true, force: true });
  }
});
