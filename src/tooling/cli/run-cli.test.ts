import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { evaluators } from '../../index.js';
import type { RunResult } from '../../index.js';
import { reply, scriptedModel } from '../../testing/index.js';
import { virtualClock } from '../../testing/index.js';
import type { BundledExample } from './bundled-examples.js';
import { runCli } from './run-cli.js';

const cwd = mkdtempSync(join(tmpdir(), 'loopstate-cli-'));
afterAll(() => rmSync(cwd, { recursive: true, force: true }));

/** Runs the CLI in process with output captured per stream, in a scratch directory. */
async function cli(argv: string[], examples?: Record<string, BundledExample>) {
  const out: string[] = [];
  const err: string[] = [];
  const io = { out: (text: string) => out.push(text), err: (text: string) => err.push(text), cwd, env: {} };
  const code = await runCli(argv, io, examples && { examples });
  return { code, out: out.join('\n'), err: err.join('\n') };
}

const manifest = JSON.parse(readFileSync(new URL('../../../package.json', import.meta.url), 'utf8')) as {
  version: string;
};

/** An example whose run fails its evaluation for good. */
const failing: BundledExample = {
  description: 'fails',
  load: () =>
    Promise.resolve({
      config: {
        model: scriptedModel([reply('not json')]),
        evaluate: [evaluators.json()],
        limits: { maxRetries: 0 },
        clock: virtualClock(),
      },
      goal: 'Answer in JSON',
    }),
};

describe('runCli help and version', () => {
  it.each([['--help'], ['-h'], ['help']])('prints the usage to stdout and exits 0 for %s', async (...argv) => {
    const { code, out, err } = await cli(argv);
    expect(code).toBe(0);
    expect(out).toMatch(/^Usage: loopstate <command>/);
    expect(out).toContain('run <example | loop file>');
    for (const name of ['order-status', 'weekly-report', 'tool-feedback', 'incident'])
      expect(out).toContain(`  ${name}`);
    expect(err).toBe('');
  });

  it.each([
    ['run', '--help'],
    ['example', '-h'],
    ['help', 'run'],
  ])('prints the run options and exit codes for %s', async (...argv) => {
    const { code, out } = await cli(argv);
    expect(code).toBe(0);
    expect(out).toMatch(/^Usage: loopstate run <example \| path\/to\/loop/);
    for (const option of [
      '--model openai:<name>',
      '--base-url',
      '--api-key-env',
      '--record',
      '--replay',
      '--trace',
      '--json',
      '--quiet',
      'Exit codes:',
    ])
      expect(out).toContain(option);
  });

  it('says in run and verify --help that the loop file is imported, its top level run, before the loop is looked for', async () => {
    for (const command of ['run', 'verify']) {
      const { code, out } = await cli([command, '--help']);
      expect(code).toBe(0);
      const text = out.replace(/\s+/g, ' ');
      expect(text).toMatch(
        /file is imported to find (them|its loop): its top level runs \(with any side effects it has\) before (loopstate|verify) can tell whether it exports/,
      );
    }
  });

  it.each([['--version'], ['-v']])("prints package.json's version and exits 0 for %s", async (...argv) => {
    const { code, out, err } = await cli(argv);
    expect(code).toBe(0);
    expect(out).toBe(manifest.version);
    expect(err).toBe('');
  });

  it('lists the injected example names in the usage', async () => {
    const { out } = await cli(['--help'], { alpha: failing, beta: failing });
    expect(out).toMatch(/ {2}alpha {2}fails\n {2}beta {3}fails/);
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
    const { code, out, err } = await cli(['launch', 'order-status']);
    expect(code).toBe(2);
    expect(out).toBe('');
    expect(err).toMatch(/^loopstate: unknown command "launch"\n\nUsage: loopstate <command>/);
  });

  it("names inspect's bad option in the parser's words, then shows the usage", async () => {
    const { code, out, err } = await cli(['inspect', 'trace.jsonl', '--port']);
    expect(code).toBe(2);
    expect(out).toBe('');
    expect(err).toMatch(/^loopstate inspect: Option '--port <value>' argument missing\n\nUsage: loopstate <command>/);
  });

  it('names an unknown example and lists the known ones, without running anything', async () => {
    let loads = 0;
    const counted: BundledExample = { description: '', load: () => (loads++, failing.load()) };
    const { code, out, err } = await cli(['example', 'billing'], { 'order-status': counted, 'weekly-report': counted });
    expect(code).toBe(2);
    expect(out).toBe('');
    expect(err).toBe(
      'loopstate run: unknown example "billing"; choose one of: order-status, weekly-report, or give the path of a loop file',
    );
    expect(loads).toBe(0);
  });

  it('does not mistake inherited object keys for examples', async () => {
    for (const name of ['constructor', 'toString', '__proto__']) {
      const { code, err } = await cli(['run', name]);
      expect(code).toBe(2);
      expect(err).toContain(`unknown example "${name}"`);
    }
  });

  it('names an unknown option and shows the run usage', async () => {
    const { code, out, err } = await cli(['example', '--jsn']);
    expect(code).toBe(2);
    expect(out).toBe('');
    expect(err).toMatch(/^loopstate run: Unknown option '--jsn'/);
    expect(err).toContain('Usage: loopstate run');
  });

  it('refuses conflicting model options', async () => {
    expect((await cli(['run', 'order-status', '--replay', 'a.json', '--record', 'b.json'])).code).toBe(2);
    expect((await cli(['run', 'order-status', '--base-url', 'http://127.0.0.1:1/v1'])).err).toContain(
      '--base-url needs --model openai:<name>',
    );
    expect((await cli(['run', 'order-status', '--model', 'gpt-4.1'])).err).toContain(
      '--model expects openai:<model name>',
    );
  });
});

describe('runCli run and example', () => {
  it('runs order-status by default with progress on stderr and the report on stdout', async () => {
    const { code, out, err } = await cli(['example']);
    expect(code).toBe(0);
    expect(err).toContain('step 1/4 [main] tool call get_order_status {"order_id":"101"}');
    expect(err).toContain(
      '  retry 1 · get_order_status: argument repair (order_id: expected an order id like O-100), sent back to the model\n',
    );
    expect(out.split('\n').slice(0, 5)).toEqual([
      'loopstate run: order-status (offline, scripted model)',
      '',
      'status:      succeeded',
      'stop reason: completed: every task finished with an answer',
      '             1 of 1 task(s) passed evaluation',
    ]);
    expect(out).toContain('"answer":"Order O-101 has shipped."');
    expect(out).toContain('steps:       3 of 4; retries: 1 argument repair');
    expect(out).toMatch(
      /trace: {7}\.loopstate\/runs\/run_\w+\.jsonl \(\d+ events\)\n {13}open it with: loopstate inspect \.loopstate\/runs\/run_\w+\.jsonl/,
    );
  });

  it('writes the trace where --trace says and prints the result as JSON with --json, without progress on stdout', async () => {
    const { code, out, err } = await cli(['run', 'weekly-report', '--json', '--trace', 'traces/weekly.jsonl']);
    expect(code).toBe(0);
    expect(err).toContain('retry 2 (reflection');
    const printed = JSON.parse(out) as { target: string; model: string; traceFile: string; result: RunResult };
    expect(printed).toMatchObject({
      target: 'weekly-report',
      model: 'offline, scripted model',
      traceFile: join('traces', 'weekly.jsonl'),
      result: { status: 'succeeded', stopReason: 'completed' },
    });
    const lines = readFileSync(join(cwd, 'traces', 'weekly.jsonl'), 'utf8')
      .trim()
      .split('\n');
    expect(lines).toHaveLength(printed.result.trace.length);
  });

  it("writes to the loop's own trace.file when --trace is not given, and still calls its onEvent", async () => {
    const seen: string[] = [];
    const own: BundledExample = {
      description: 'own trace',
      load: () =>
        Promise.resolve({
          config: {
            model: scriptedModel([reply('done')]),
            trace: { file: 'own.jsonl', onEvent: (event) => seen.push(event.type) },
          },
          goal: 'Go',
        }),
    };
    const { code, out } = await cli(['run', 'own', '--quiet'], { own });
    expect(code).toBe(0);
    expect(out).toContain('trace:       own.jsonl');
    expect(readFileSync(join(cwd, 'own.jsonl'), 'utf8').trim().split('\n').length).toBe(seen.length);
    expect(seen.at(-1)).toBe('run-end');
  });

  it('refuses a --trace path that cannot be written, exit 2', async () => {
    writeFileSync(join(cwd, 'a-file'), '');
    const { code, out, err } = await cli(['run', 'order-status', '--quiet', '--trace', 'a-file/run.jsonl']);
    expect(code).toBe(2);
    expect(out).toBe('');
    expect(err).toMatch(/^loopstate run: --trace a-file\/run\.jsonl: /);
  });

  it('plays the incident example (stop for approval, resume from the store) and reports the resumed run', async () => {
    const { code, out, err } = await cli(['run', 'incident', '--json']);
    expect(code).toBe(0);
    expect(err).toMatch(/stopped after \d+ steps: needs_human; waiting for approval of restart_service/);
    const printed = JSON.parse(out) as { traceFile: string; result: RunResult };
    expect(printed.result).toMatchObject({ status: 'succeeded', stopReason: 'completed' });
    expect(readFileSync(join(cwd, printed.traceFile), 'utf8').trim().split('\n')).toHaveLength(
      printed.result.trace.length,
    );
    expect((await cli(['run', 'incident', '--model', 'openai:gpt-4.1-mini'])).code).toBe(2);
  });

  it("adds the model's own id to --json beside how it ran, for a played example too", async () => {
    const named: BundledExample = {
      description: 'named model',
      load: () =>
        Promise.resolve({
          config: {
            model: scriptedModel([reply('done')], { id: 'gpt-4.1-mini' }),
            prices: { 'gpt-4.1-mini': { inputPerMillion: 0.4, outputPerMillion: 1.6 } },
          },
          goal: 'Go',
        }),
    };
    const printed = JSON.parse((await cli(['run', 'named', '--json', '--quiet'], { named })).out) as {
      model: string;
      modelId: string;
    };
    expect(printed).toMatchObject({ model: 'offline, gpt-4.1-mini model', modelId: 'gpt-4.1-mini' });
    const played = JSON.parse((await cli(['run', 'incident', '--json', '--quiet'])).out) as {
      model: string;
      modelId: string;
    };
    expect(played).toMatchObject({ model: 'offline, scripted model', modelId: 'scripted' });
  });

  it('prints nothing on stderr with --quiet', async () => {
    const { code, err } = await cli(['run', 'order-status', '--quiet']);
    expect(code).toBe(0);
    expect(err).toBe('');
  });

  it('exits 1 and still prints the result when the run does not succeed, with --json too', async () => {
    const text = await cli(['run', 'broken', '--quiet'], { broken: failing });
    expect(text.code).toBe(1);
    expect(text.out).toMatch(/^loopstate run: broken \(offline, scripted model\)\n\nstatus: {6}failed\n/);
    const json = await cli(['run', 'broken', '--json', '--quiet'], { broken: failing });
    expect(json.code).toBe(1);
    expect(JSON.parse(json.out)).toMatchObject({ result: { status: 'failed' } });
  });

  it('names the missing API key variable, exit 4', async () => {
    const { code, err } = await cli([
      'run',
      'order-status',
      '--model',
      'openai:gpt-4.1-mini',
      '--api-key-env',
      'MY_KEY',
    ]);
    expect(code).toBe(4);
    expect(err).toBe('loopstate run: the API key variable MY_KEY is not set; export MY_KEY=<key>');
  });

  it('exits 1 with the message when loading an example throws', async () => {
    const throwing: BundledExample = { description: '', load: () => Promise.reject(new Error('script exhausted')) };
    const { code, out, err } = await cli(['run', 'throwing'], { throwing });
    expect(code).toBe(1);
    expect(out).toBe('');
    expect(err).toBe('loopstate run: script exhausted');
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
