/**
 * Writing a cassette never goes through a symbolic link, whether planted at a temporary name a
 * recorder might use or at the cassette path itself: the link's target (a "victim" file) stays as it
 * was. And the file on disk is only ever a whole cassette.
 */
import {
  lstatSync,
  mkdtempSync,
  readdirSync,
  readFileSync,
  rmSync,
  statSync,
  symlinkSync,
  writeFileSync,
} from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { createLoop } from '../../index.js';
import type { ModelRequest } from '../../contracts/model.js';
import { reply, scriptedModel, virtualClock } from '../../testing/index.js';
import { readCassette } from './cassette-format.js';
import { recordModel } from './record-model.js';

const VICTIM_TEXT = 'the victim file: nobody may overwrite this\n';
let folder: string;
let path: string;
let victim: string;
beforeEach(() => {
  folder = mkdtempSync(join(tmpdir(), 'loopstate-cassette-file-'));
  path = join(folder, 'run.json');
  victim = join(folder, 'victim.txt');
  writeFileSync(victim, VICTIM_TEXT);
});
afterEach(() => rmSync(folder, { recursive: true, force: true }));

const ask = (content: string): ModelRequest => ({
  messages: [{ role: 'user', content }],
  tools: [],
  signal: new AbortController().signal,
});

describe('writing a cassette', () => {
  it('never writes through a link planted at the temporary name earlier versions used (<path>.<pid>.tmp)', async () => {
    const planted = `${path}.${process.pid}.tmp`;
    symlinkSync(victim, planted);
    const recording = recordModel(scriptedModel([reply('one'), reply('two')]), path);
    await recording.generate(ask('first'));
    await recording.generate(ask('second'));
    recording.close();
    expect(readFileSync(victim, 'utf8')).toBe(VICTIM_TEXT);
    expect(readCassette(path).calls).toHaveLength(2);
    expect(lstatSync(planted).isSymbolicLink()).toBe(true);
  });

  it('refuses a cassette path that is a symbolic link, naming it, and leaves the link and its target as they were', async () => {
    symlinkSync(victim, path);
    const inner = scriptedModel([reply('done')]);
    const result = await createLoop({ model: recordModel(inner, path), clock: virtualClock() }).run({ goal: 'Go.' });
    expect(result.stopReason).toBe('fatal_error');
    expect(result.error).toMatchObject({
      name: 'CassetteFileError',
      code: 'cassette_write_failed',
      message: `cassette ${path}: is a symbolic link; recordModel never writes through a link (remove it, or record to the file it points to)`,
    });
    expect(readFileSync(victim, 'utf8')).toBe(VICTIM_TEXT);
    expect(lstatSync(path).isSymbolicLink()).toBe(true);
    // Refused with the lock, before the call reached the model: nothing was spent on a cassette that cannot be written.
    expect(inner.calls).toHaveLength(0);
  });

  it('writes through a hidden temporary file of its own, created for the owner only, and leaves none behind', async () => {
    const recording = recordModel(scriptedModel([reply('one')]), path);
    await recording.generate(ask('first'));
    recording.close();
    expect(statSync(path).mode & 0o777).toBe(0o600);
    expect(readdirSync(folder).sort()).toEqual(['run.json', 'victim.txt']);
  });

  it('removes temporary files a killed recorder left behind, once it holds the lock', async () => {
    const leftover = join(folder, `.run.json.${'0'.repeat(32)}.tmp`);
    const unrelated = join(folder, `.other.json.${'0'.repeat(32)}.tmp`);
    writeFileSync(leftover, '{"half": ');
    writeFileSync(unrelated, 'not ours');
    const recording = recordModel(scriptedModel([reply('one')]), path);
    await recording.generate(ask('first'));
    recording.close();
    expect(readdirSync(folder).sort()).toEqual([`.other.json.${'0'.repeat(32)}.tmp`, 'run.json', 'victim.txt']);
  });
});
