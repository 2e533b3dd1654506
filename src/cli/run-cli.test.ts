import { readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import { createLoop } from '../index.js';
import type { RunResult } from '../runtime/run-result.js';
import { reply, scriptedModel } from '../testing/index.js';
import { virtualClock } from '../testing/virtual-clock.js';
import { evaluators } from '../evaluators/index.js';
import { runCli } from './run-cli.js';

/** Runs the CLI with output captured per stream. */
async function cli(argv: string[], examples?: Record<string, () => Promise<RunResult>>) {
  const out: string[] = [];
  const err: string[] = [];
  const code = await runCli(argv, { out: (text) => out.push(text), err: (text) => err.push(text) }, examples && { examples });
  return { code, out: out.join('\n'), err: err.join('\n') };
}

const manifest = JSON.parse(readFileSync(new URL('../../package.json', import.meta.url), 'utf8')) as { version: string };

/** A real offline run that fails its evaluation for good. */
function failingRun(): Promise<RunResult> {
  return createLoop({
    model: scriptedModel([reply('not json')]),
    evaluate: [evaluators.json()],
    limits: { maxRetries: 0 },
    clock: virtualClock(),
  }).run({ goal: 'Answer in JSON' });
}

describe('runCli help and version', () => {
  it.each([['--help'], ['-h'], ['example', '--help'], ['nonsense', '-h']])('prints usage to stdout and exits 0 for %s', async (...argv) => {
    const { code, out, err } = await cli(argv);
    expect(code).toBe(0);
    expect(out).toMatch(/^Usage: loopstate <command>/);
    expect(out).toContain('names: order-status, weekly-report');
    expect(out).toContain('--json');
    expect(err).toBe('');
  });

  it.each([['--version'], ['-v'], ['example', '-v']])("prints package.json's version and exits 0 for %s", async (...argv) => {
    const { code, out, err } = await cli(argv);
    expect(code).toBe(0);
    expect(out).toBe(manifest.version);
    expect(err).toBe('');
  });

  it('lists the injected example names in the usage', async () => {
    const { out } = await cli(['--help'], { alpha: failingRun, beta: failingRun });
    expect(out).toContain('names: alpha, beta');
  });
});

describe('runCli usage errors exit 2', () => {
  it('prints usage to stderr without a command', async () => {
    const { code, out, err } = await cli([]);
    expect(code).toBe(2);
    expect(out).toBe('');
    expect(err).toMatch(/^Usage: loopstate <command>/);
  });

  it('names an unknown command and shows the usage', async () => {
    const { code, out, err } = await cli(['run', 'order-status']);
    expect(code).toBe(2);
    expect(out).toBe('');
    expect(err).toMatch(/^loopstate: unknown command "run"\n\nUsage: loopstate <command>/);
  });

  it('names an unknown example and lists the known ones, without running anything', async () => {
    let runs = 0;
    const counted = () => (runs++, failingRun());
    const { code, out, err } = await cli(['example', 'billing'], { 'order-status': counted, 'weekly-report': counted });
    expect(code).toBe(2);
    expect(out).toBe('');
    expect(err).toBe('loopstate: unknown example "billing"; choose one of: order-status, weekly-report');
    expect(runs).toBe(0);
  });

  it('does not mistake inherited object keys for examples', async () => {
    for (const name of ['constructor', 'toString', '__proto__']) {
      const { code, err } = await cli(['example', name]);
      expect(code).toBe(2);
      expect(err).toContain(`unknown example "${name}"`);
    }
  });

  it('names an unknown option and shows the usage', async () => {
    const { code, out, err } = await cli(['example', '--jsn']);
    expect(code).toBe(2);
    expect(out).toBe('');
    expect(err).toMatch(/^loopstate: Unknown option '--jsn'/);
    expect(err).toContain('Usage: loopstate <command>');
  });
});

describe('runCli example', () => {
  it('runs order-status by default and prints the formatted result', async () => {
    const { code, out, err } = await cli(['example']);
    expect(code).toBe(0);
    expect(err).toBe('');
    expect(out.split('\n').slice(0, 4)).toEqual(['loopstate example: order-status (offline, scripted model)', '', 'status:      succeeded', expect.stringMatching(/^stop reason: completed /)]);
    expect(out).toContain('"answer":"Order O-101 has shipped."');
    expect(out).toContain('1 tool call(s)');
  });

  it('runs weekly-report by name', async () => {
    const { code, out, err } = await cli(['example', 'weekly-report']);
    expect(code).toBe(0);
    expect(err).toBe('');
    expect(out).toMatch(/^loopstate example: weekly-report \(offline, scripted model\)\n\nstatus: {6}succeeded\n/);
    expect(out).toContain('# 周报');
  });

  it('prints the whole result with its trace as JSON with --json', async () => {
    const { code, out, err } = await cli(['example', 'order-status', '--json']);
    expect(code).toBe(0);
    expect(err).toBe('');
    const result = JSON.parse(out) as RunResult;
    expect(result).toMatchObject({ status: 'succeeded', stopReason: 'completed', output: { order_id: 'O-101', status: 'shipped' } });
    expect(result.trace[0]?.type).toBe('run-start');
    expect(result.trace.at(-1)?.type).toBe('run-end');
  });

  it('exits 1 and still prints the result when the example does not succeed', async () => {
    const { code, out, err } = await cli(['example', 'broken'], { broken: failingRun });
    expect(code).toBe(1);
    expect(err).toBe('');
    expect(out).toMatch(/^loopstate example: broken \(offline, scripted model\)\n\nstatus: {6}failed\n/);
  });

  it('exits 1 with --json too when the example does not succeed', async () => {
    const { code, out } = await cli(['example', 'broken', '--json'], { broken: failingRun });
    expect(code).toBe(1);
    expect(JSON.parse(out)).toMatchObject({ status: 'failed' });
  });

  it('exits 1 with the message when the example throws', async () => {
    const throwing = () => Promise.reject(new Error('script exhausted'));
    const { code, out, err } = await cli(['example', 'throwing'], { throwing });
    expect(code).toBe(1);
    expect(out).toBe('');
    expect(err).toBe('loopstate: example "throwing" threw: script exhausted');
  });

  it('exits 1 instead of rejecting when writing the output fails', async () => {
    const failures: string[] = [];
    const io = {
      out: () => {
        throw new Error('EPIPE');
      },
      err: (text: string) => failures.push(text),
    };
    await expect(runCli(['--version'], io)).resolves.toBe(1);
    expect(failures).toEqual(['loopstate: EPIPE']);
  });
});
