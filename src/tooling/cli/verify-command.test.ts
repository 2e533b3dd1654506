/**
 * `loopstate verify` end to end, as a real child process: the bin is bundled with vite first (so no earlier
 * build is needed), into a folder under dist/ so that it finds vite in node_modules to load `.ts` loop
 * files, as a user's project with vite installed does.
 */
import { execFile, execFileSync } from 'node:child_process';
import { existsSync, mkdtempSync, rmSync, mkdirSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { bundleForNode } from '../../../test/support/bundle-for-node.js';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { VERIFY_REPORT_VERSION } from '../verify/format-report.js';

const root = fileURLToPath(new URL('../../..', import.meta.url));
mkdirSync(join(root, 'dist'), { recursive: true });
const directory = mkdtempSync(join(root, 'dist', 'verify-e2e-'));
const bin = join(directory, 'cli.mjs');
afterAll(() => rmSync(directory, { recursive: true, force: true }));

beforeAll(async () => {
  // The examples import `loopstate` by name, which resolves to dist/: build it when no other test has yet
  // (the e2e tests build it too; which file runs first is the runner's choice).
  if (!existsSync(join(root, 'dist', 'src', 'index.js')))
    execFileSync(
      process.execPath,
      [join(root, 'node_modules', 'typescript', 'bin', 'tsc'), '-p', join(root, 'tsconfig.build.json')],
      { cwd: root },
    );
  await bundleForNode({ entry: join(root, 'src/tooling/cli/bin.ts'), outDir: directory, fileName: 'cli.mjs' });
}, 240_000);

function loopstate(...args: string[]): Promise<{ code: number; out: string; err: string }> {
  return new Promise((resolve) => {
    execFile(process.execPath, [bin, ...args], { cwd: root, timeout: 80_000 }, (error, stdout, stderr) => {
      const code = error === null ? 0 : typeof error.code === 'number' ? error.code : -1;
      resolve({ code, out: stdout, err: stderr });
    });
  });
}

describe('loopstate verify, as a child process', () => {
  it('prints its help with the exit codes and the JSON shape, and exits 0', async () => {
    const { code, out } = await loopstate('verify', '--help');
    expect(code).toBe(0);
    expect(out).toMatch(/^Usage: loopstate verify <loop file> \[--json\] \[--scale\]/);
    expect(out).toMatch(/Exit codes:\n {2}0 {2}bounded: no violation\n {2}1 {2}a violation was found/);
    expect(out).toContain('schemaVersion 1');
  });

  it('proves the TypeScript order-status example bounded, without a build step, and exits 0', async () => {
    const { code, out, err } = await loopstate('verify', 'examples/order-status.ts');
    expect(err).toBe('');
    expect(code).toBe(0);
    expect(out).toMatch(/^loopstate verify: examples\/order-status\.ts\n/);
    expect(out).toMatch(
      /explored [\d,]+ abstract states and [\d,]+ transitions in [\d.]+ s \([\d,]+ states\/s\), exactly/,
    );
    expect(out).toMatch(/model calls {3}12 /);
    expect(out).toMatch(/tool calls {4}60 /);
    expect(out).toMatch(/cost {10}≤ \$0\.05 \+ one call/);
    expect(out).toContain('\nbounded: no run goes on for ever');
  });

  it('prints the report as JSON with --json', async () => {
    const { code, out } = await loopstate('verify', 'examples/order-status.ts', '--json');
    expect(code).toBe(0);
    const report = JSON.parse(out) as Record<string, unknown>;
    expect(Object.keys(report)).toEqual([
      'schemaVersion',
      'file',
      'bounded',
      'model',
      'limits',
      'explored',
      'coverage',
      'stopReasons',
      'worstCase',
      'violations',
      'unboundedWaits',
      'notes',
    ]);
    expect(report).toMatchObject({
      schemaVersion: VERIFY_REPORT_VERSION,
      file: 'examples/order-status.ts',
      bounded: true,
      model: { id: 'scripted', price: { inputPerMillion: 0.4, outputPerMillion: 1.6 } },
      limits: { maxSteps: 4, maxCostUsd: 0.05 },
      explored: { scaledTo: null },
      worstCase: { modelCalls: { value: 12 }, toolCalls: { value: 60 }, costUsd: { value: 0.05, plusOneCall: true } },
      violations: [],
    });
  });

  it('proves tool-feedback bounded exactly at its real limits, with the reductions it used and its states per second', async () => {
    const { code, out } = await loopstate('verify', 'examples/tool-feedback.ts', '--json');
    expect(code).toBe(0);
    const report = JSON.parse(out) as {
      limits: { maxSteps: number };
      explored: { scaledTo: unknown; states: number; statesPerSecond: number; reductions: string[] };
      worstCase: { modelCalls: { value: number }; toolCalls: { value: number } };
    };
    expect(report.limits.maxSteps).toBe(24);
    expect(report.explored.scaledTo).toBeNull();
    expect(report.explored.statesPerSecond).toBeGreaterThan(0);
    expect(
      report.explored.reductions.filter((reduction) => reduction.startsWith('symmetry: 4 interchangeable tools')),
    ).toHaveLength(1);
    expect([report.worstCase.modelCalls.value, report.worstCase.toolCalls.value]).toEqual([72, 380]);
  }, 90_000);

  it('verifies a plain JavaScript loop config; Infinity is written as "Infinity"', async () => {
    const { code, out } = await loopstate('verify', 'test/fixtures/verify/plain-config-loop.mjs', '--json');
    expect(code).toBe(0);
    const report = JSON.parse(out) as { limits: { deadlineMs: unknown }; worstCase: { modelCalls: { value: number } } };
    expect(report.limits.deadlineMs).toBe('Infinity');
    // 5 decisions × 2 transport attempts each (maxRetries 1 + 1: the config sets no maxTransportAttempts).
    expect(report.worstCase.modelCalls.value).toBe(5 * 2);
  });

  it('rejects a destructive tool under an allow-all policy with a counterexample, and exits 1', async () => {
    const { code, out } = await loopstate('verify', 'test/fixtures/verify/destructive-loop.ts');
    expect(code).toBe(1);
    expect(out).toContain(
      'VIOLATION destructive_without_approval: the destructive tool "drop_table" runs without a person\'s approval',
    );
    expect(out).toMatch(
      /counterexample \(events from the start of a run\):\n +1\. READY +run\.started\n +2\. RUNNING\.deciding +model\.responded: tool call drop_table \(destructive, allowed without approval\)/,
    );
  });

  it('exits 2 for a space over the bound without --scale, and scales it down with --scale', async () => {
    const exact = await loopstate('verify', 'test/fixtures/verify/plain-config-loop.mjs', '--max-states', '100');
    expect(exact.code).toBe(2);
    expect(exact.out).toBe('');
    expect(exact.err).toContain('more than 100 abstract states; run with --scale');
    const scaled = await loopstate(
      'verify',
      'test/fixtures/verify/plain-config-loop.mjs',
      '--max-states',
      '100',
      '--scale',
    );
    expect(scaled.code).toBe(0);
    expect(scaled.out).toContain('SCALED DOWN to maxSteps 2');
    expect(scaled.out).toContain('note: the exact space is over 100 states: explored with maxSteps 2 (not 5)');
  });

  it.each([
    [['verify'], 'a loop file is required'],
    [['verify', 'missing-loop.ts'], 'no such loop file: missing-loop.ts'],
    [
      ['verify', 'test/fixtures/verify/no-loop.mjs'],
      'has no loop: its default export must be a createLoop(...) result or a loop config',
    ],
    [['verify', 'README.md'], 'is not a JavaScript or TypeScript module'],
    [['verify', 'examples/order-status.ts', '--jsn'], "Unknown option '--jsn'"],
  ])('exits 2 with a message for %j', async (args, message) => {
    const { code, out, err } = await loopstate(...args);
    expect(code).toBe(2);
    expect(out).toBe('');
    expect(err).toContain(message);
  });
});
