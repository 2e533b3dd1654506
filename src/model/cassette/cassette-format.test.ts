import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { reply, scriptedModel } from '../../testing/index.js';
import { CassetteFileError } from './cassette-errors.js';
import { prettyJson, readCassette } from './cassette-format.js';
import { recordModel } from './record-model.js';
import { replayModel } from './replay-model.js';

let folder: string;
let path: string;
beforeEach(async () => {
  folder = mkdtempSync(join(tmpdir(), 'loopstate-cassette-format-'));
  path = join(folder, 'run.json');
  const model = recordModel(scriptedModel([reply('one'), reply('two')]), path);
  const signal = new AbortController().signal;
  await model.generate({ messages: [{ role: 'user', content: 'first' }], tools: [], signal });
  await model.generate({ messages: [{ role: 'user', content: 'first' }, { role: 'assistant', content: 'one' }, { role: 'user', content: 'second' }], tools: [], signal });
});
afterEach(() => rmSync(folder, { recursive: true, force: true }));

function edit(change: (cassette: Record<string, unknown> & { calls: Record<string, unknown>[]; messages: Record<string, unknown>[] }) => void): void {
  const cassette = JSON.parse(readFileSync(path, 'utf8')) as Parameters<typeof change>[0];
  change(cassette);
  writeFileSync(path, JSON.stringify(cassette));
}

function failure(read: () => unknown): CassetteFileError {
  try {
    read();
  } catch (error) {
    if (error instanceof CassetteFileError) return error;
    throw error;
  }
  throw new Error('expected a CassetteFileError');
}

describe('readCassette', () => {
  it('reads what recordModel wrote', () => {
    const cassette = readCassette(path);
    expect(cassette.calls.map((call) => call.request.messages)).toEqual([[0], [0, 1, 2]]);
    expect(cassette.messages).toHaveLength(3);
  });

  it('names a missing file', () => {
    const error = failure(() => replayModel(join(folder, 'nope.json')));
    expect(error.code).toBe('cassette_not_found');
    expect(error.message).toBe(`cassette ${join(folder, 'nope.json')}: no such file; record it first with recordModel`);
  });

  it('refuses a truncated file as invalid JSON, naming the path', () => {
    const text = readFileSync(path, 'utf8');
    writeFileSync(path, text.slice(0, Math.floor(text.length / 2)));
    const error = failure(() => replayModel(path));
    expect(error.code).toBe('cassette_corrupt');
    expect(error.message).toMatch(new RegExp(`^cassette ${path}: is not valid JSON, perhaps cut short`));
  });

  it('refuses a JSON file that is not a cassette', () => {
    writeFileSync(path, '[1, 2, 3]');
    expect(failure(() => replayModel(path))).toMatchObject({ code: 'cassette_corrupt', message: expect.stringContaining('not a loopstate cassette') });
  });

  it('refuses a cassette from a newer version by its version, not as a wrong shape', () => {
    edit((cassette) => {
      cassette.schemaVersion = 2;
      cassette.somethingNew = true;
    });
    expect(failure(() => replayModel(path))).toMatchObject({
      code: 'cassette_version_unsupported',
      path,
      message: `cassette ${path}: schemaVersion 2 was written by a newer loopstate; this one reads schemaVersion 1`,
    });
  });

  it('names a field of the wrong shape', () => {
    edit((cassette) => {
      (cassette.calls[1] as { latencyMs: unknown }).latencyMs = -3;
    });
    expect(failure(() => replayModel(path))).toMatchObject({ code: 'cassette_corrupt', message: expect.stringContaining('calls[1].latencyMs') });
  });

  it('refuses a call with both a response and an error, or neither', () => {
    edit((cassette) => {
      delete cassette.calls[0]?.response;
    });
    expect(failure(() => replayModel(path)).message).toContain('calls[0]: expected exactly one of response, error or interrupted');
  });

  it('refuses a reference outside the pools', () => {
    edit((cassette) => {
      (cassette.calls[1] as { request: { messages: number[] } }).request.messages = [0, 1, 7];
    });
    expect(failure(() => replayModel(path)).message).toContain('calls[1].request.messages refers to messages[7], but there are 3');
  });

  it('refuses a request edited away from its key, and a wrong occurrence', () => {
    edit((cassette) => {
      (cassette.messages[2] as { content: string }).content = 'edited by hand';
    });
    expect(failure(() => replayModel(path)).message).toContain('calls[1].key does not match its request');

    edit((cassette) => {
      (cassette.messages[2] as { content: string }).content = 'second';
      (cassette.calls[1] as { occurrence: number }).occurrence = 1;
    });
    expect(failure(() => replayModel(path)).message).toContain('calls[1].occurrence is 1, but 0 earlier calls have its key');
  });
});

describe('prettyJson', () => {
  it('indents objects and keeps arrays of plain values on one line', () => {
    expect(prettyJson({ a: [0, 1], b: { c: null }, d: [], e: [{ f: 'x' }], g: undefined })).toBe(
      '{\n  "a": [0, 1],\n  "b": {\n    "c": null\n  },\n  "d": [],\n  "e": [\n    {\n      "f": "x"\n    }\n  ]\n}',
    );
  });
});
