import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { createLoop } from '../../index.js';
import { reply, scriptedModel, toolCall } from '../../testing/index.js';
import { virtualClock } from '../../testing/index.js';
import { defineTool } from '../../index.js';
import type { BundledExample } from './bundled-examples.js';
import { runCli } from './run-cli.js';
import { terminalLine, terminalSafe } from './terminal-safe.js';
import { z } from 'zod';

const cwd = mkdtempSync(join(tmpdir(), 'loopstate-terminal-'));
afterAll(() => rmSync(cwd, { recursive: true, force: true }));

/** What a hostile reply carries: an OSC 52 clipboard write, a title change (OSC 0), a clear screen (CSI 2J and its one-byte C1 form), a carriage return. */
const CLIPBOARD = '\u001b]52;c;ZWNobyBwd25lZA==\u0007';
const TITLE = '\u001b]0;pwned\u0007';
const CLEAR_SCREEN = '\u001b[2J';
const C1_CLEAR_SCREEN = '\u009b2J';
const HOSTILE = `Done.${CLIPBOARD}${TITLE}${CLEAR_SCREEN}${C1_CLEAR_SCREEN}\rforged`;

/** The progress view's own redraw of its status line: the one control sequence the CLI itself writes. */
const OWN_CLEAR_LINE = '\r\u001b[2K';
// eslint-disable-next-line no-control-regex -- looking for control characters is the point
const CONTROL = /[\u0000-\u0008\u000B-\u001F\u007F-\u009F]/;

describe('terminalSafe', () => {
  it('writes escape, bell, C1 and carriage return as visible \\u escapes, keeping newlines and tabs', () => {
    expect(terminalSafe(`a\tb\n${TITLE}${C1_CLEAR_SCREEN}\r`)).toBe('a\tb\n\\u001b]0;pwned\\u0007\\u009b2J\\u000d');
    expect(terminalSafe('plain text, “quotes” and ünïcödé')).toBe('plain text, “quotes” and ünïcödé');
    expect(terminalSafe('\u202eevil')).toBe('\\u202eevil');
  });

  it('keeps a value on one line with terminalLine', () => {
    expect(terminalLine('run-1\nrun ended: completed\t')).toBe('run-1\\u000arun ended: completed\\u0009');
  });

  it('leaves JSON parseable and the data exact', () => {
    const json = JSON.stringify({ reply: HOSTILE });
    const safe = terminalSafe(json);
    expect(safe).not.toMatch(CONTROL);
    expect(JSON.parse(safe)).toEqual({ reply: HOSTILE });
  });
});

/** Runs the CLI in process; `progress` is a terminal-like stream, so the status line is redrawn in place as on a TTY. */
async function cli(argv: string[], examples?: Record<string, BundledExample>) {
  const out: string[] = [];
  const err: string[] = [];
  const progress: string[] = [];
  const io = {
    out: (text: string) => out.push(text),
    err: (text: string) => err.push(text),
    progress: { write: (text: string) => progress.push(text), isTTY: true, columns: 200 },
    cwd,
    env: {},
  };
  const code = await runCli(argv, io, { ...(examples ? { examples } : {}), stop: AbortSignal.abort() });
  return { code, out: out.join('\n'), err: err.join('\n'), progress: progress.join('') };
}

const lookup = defineTool({
  name: 'lookup',
  description: 'Looks a thing up',
  input: z.object({ id: z.string() }),
  access: 'read',
  execute: () => ({ note: HOSTILE }),
});

/** Evaluations so far: the first one fails. */
let seen = 0;

/** A loop whose model and tool answer with control sequences, and whose evaluator fails first with one in its reason. */
const hostile: BundledExample = {
  description: 'hostile',
  load: () =>
    Promise.resolve({
      config: {
        model: scriptedModel([toolCall('lookup', { id: HOSTILE }), reply(HOSTILE), reply(HOSTILE)]),
        tools: [lookup],
        evaluate: [
          {
            name: 'once',
            kind: 'rule',
            evaluate: ({ parsed }) => ({ passed: seen++ > 0, reason: `not yet ${TITLE}`, parsed }),
          },
        ],
        clock: virtualClock(),
      },
      goal: 'Go',
    }),
};

describe('loopstate run prints no control sequence from a model, a tool or an evaluator', () => {
  it('escapes them in the live progress (status line included) and in the report', async () => {
    seen = 0;
    const { code, out, progress } = await cli(['run', 'hostile'], { hostile });
    expect(code).toBe(0);
    expect(progress.replaceAll(OWN_CLEAR_LINE, '')).not.toMatch(CONTROL);
    expect(progress).toContain(
      'reply Done.\\u001b]52;c;ZWNobyBwd25lZA==\\u0007\\u001b]0;pwned\\u0007\\u001b[2J\\u009b2J',
    );
    expect(progress).toContain('failed (once): not yet \\u001b]0;pwned\\u0007');
    expect(out).not.toMatch(CONTROL);
    expect(out).toContain('\\u009b2J');
  });

  it('escapes them in --json output, which stays valid JSON with the exact reply', async () => {
    seen = 0;
    const { code, out } = await cli(['run', 'hostile', '--json', '--quiet'], { hostile });
    expect(code).toBe(0);
    expect(out).not.toMatch(CONTROL);
    expect((JSON.parse(out) as { result: { output: string } }).result.output).toBe(HOSTILE);
  });
});

describe('loopstate inspect prints no control sequence from a trace', () => {
  it('escapes the run ids of a trace file written by real runs', async () => {
    const file = join(cwd, 'hostile.jsonl');
    const runIds = [`older${TITLE}`, `latest${CLEAR_SCREEN}\nforged line`];
    for (const runId of runIds)
      await createLoop({ model: scriptedModel([reply('ok')]), clock: virtualClock(), trace: { file } }).run({
        goal: 'Go',
        runId,
      });
    const { code, out, err } = await cli(['inspect', file]);
    expect(code).toBe(0);
    expect(err).toBe('');
    expect(out).not.toMatch(CONTROL);
    expect(out).toContain('run latest\\u001b[2J\\u000aforged line');
    expect(out).toContain('older\\u001b]0;pwned\\u0007');
  });
});
