import { execFileSync } from 'node:child_process';
import { mkdirSync, mkdtempSync, readFileSync, rmSync, truncateSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { reply, scriptedModel } from '../../testing/index.js';
import { CassetteFileError } from './cassette-errors.js';
import { MAX_CASSETTE_BYTES } from './cassette-file.js';
import { MAX_CASSETTE_DEPTH, prettyJson, readCassette } from './cassette-format.js';
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
  await model.generate({
    messages: [
      { role: 'user', content: 'first' },
      { role: 'assistant', content: 'one' },
      { role: 'user', content: 'second' },
    ],
    tools: [],
    signal,
  });
});
afterEach(() => rmSync(folder, { recursive: true, force: true }));

function edit(
  change: (
    cassette: Record<string, unknown> & { calls: Record<string, unknown>[]; messages: Record<string, unknown>[] },
  ) => void,
): void {
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
    expect(failure(() => replayModel(path))).toMatchObject({
      code: 'cassette_corrupt',
      message: expect.stringContaining('not a loopstate cassette'),
    });
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
    expect(failure(() => replayModel(path))).toMatchObject({
      code: 'cassette_corrupt',
      message: expect.stringContaining('calls[1].latencyMs'),
    });
  });

  it('refuses a call with both a response and an error, or neither', () => {
    edit((cassette) => {
      delete cassette.calls[0]?.response;
    });
    expect(failure(() => replayModel(path)).message).toContain(
      'calls[0]: expected exactly one of response, error or interrupted',
    );
  });

  it('refuses a reference outside the pools', () => {
    edit((cassette) => {
      (cassette.calls[1] as { request: { messages: number[] } }).request.messages = [0, 1, 7];
    });
    expect(failure(() => replayModel(path)).message).toContain(
      'calls[1].request.messages refers to messages[7], but there are 3',
    );
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
    expect(failure(() => replayModel(path)).message).toContain(
      'calls[1].occurrence is 1, but 0 earlier calls have its key',
    );
  });
});

describe('readCassette on a malformed cassette', () => {
  /** A valid cassette, but for 100,000 nested arrays in an extra field of its first message (JSON.parse takes them; every recursive walker overflowed). */
  function nestDeeply(): void {
    const levels = 100_000;
    const text = readFileSync(path, 'utf8');
    const first = '"content": "first"';
    expect(text.indexOf(first)).toBeGreaterThan(0);
    writeFileSync(path, text.replace(first, `${first}, "nested": ${'['.repeat(levels)}${']'.repeat(levels)}`));
  }

  const cases: { name: string; make: () => string; code: string; problem: RegExp; skip?: boolean }[] = [
    {
      name: 'nested 100,000 levels deep',
      make: () => (nestDeeply(), path),
      code: 'cassette_corrupt',
      problem: new RegExp(
        `^messages\\[0\\]\\.nested\\[0\\]\\[0\\]\\[0\\]… nests more than ${MAX_CASSETTE_DEPTH} levels deep`,
      ),
    },
    {
      name: 'empty',
      make: () => (writeFileSync(path, ''), path),
      code: 'cassette_corrupt',
      problem: /^is not valid JSON, perhaps cut short/,
    },
    {
      name: 'JSON null',
      make: () => (writeFileSync(path, 'null'), path),
      code: 'cassette_corrupt',
      problem: /^not a loopstate cassette/,
    },
    {
      name: 'prefixed with a byte-order mark',
      make: () => (writeFileSync(path, `\uFEFF${readFileSync(path, 'utf8')}`), path),
      code: 'cassette_corrupt',
      problem: /^is not valid JSON/,
    },
    {
      name: 'a field of the wrong type',
      code: 'cassette_corrupt',
      problem: /calls\[0\]\.request\.messages/,
      make: () => (
        edit((cassette) => void ((cassette.calls[0] as { request: { messages: unknown } }).request.messages = '0')),
        path
      ),
    },
    {
      name: 'a directory',
      make: () => (mkdirSync(join(folder, 'folder.json')), join(folder, 'folder.json')),
      code: 'cassette_unreadable',
      problem: /^is a directory; a cassette is a JSON file$/,
    },
    {
      // Without the check, reading a FIFO blocks until something writes to it: forever.
      name: 'a FIFO',
      code: 'cassette_unreadable',
      problem: /^is not a regular file; a cassette is a JSON file$/,
      skip: process.platform === 'win32',
      make: () => (execFileSync('mkfifo', [join(folder, 'fifo.json')]), join(folder, 'fifo.json')),
    },
    {
      // Sparse: the size is checked before anything is read, so the test costs no memory.
      name: 'huge',
      code: 'cassette_unreadable',
      problem: new RegExp(
        `^is ${MAX_CASSETTE_BYTES + 1} bytes, over the ${MAX_CASSETTE_BYTES} bytes a cassette may have`,
      ),
      make: () => (
        writeFileSync(join(folder, 'huge.json'), ''),
        truncateSync(join(folder, 'huge.json'), MAX_CASSETTE_BYTES + 1),
        join(folder, 'huge.json')
      ),
    },
  ];

  for (const { name, make, code, problem, skip } of cases) {
    it.skipIf(skip === true)(`refuses one that is ${name} with a CassetteFileError naming the path`, () => {
      const at = make();
      for (const read of [() => readCassette(at), () => replayModel(at)]) {
        const error = failure(read);
        expect(error).toMatchObject({ name: 'CassetteFileError', code, path: at });
        expect(error.message.startsWith(`cassette ${at}: `)).toBe(true);
        expect(error.message.slice(`cassette ${at}: `.length)).toMatch(problem);
      }
    });
  }
});

describe('prettyJson', () => {
  it('indents objects and keeps arrays of plain values on one line', () => {
    expect(prettyJson({ a: [0, 1], b: { c: null }, d: [], e: [{ f: 'x' }], g: undefined })).toBe(
      '{\n  "a": [0, 1],\n  "b": {\n    "c": null\n  },\n  "d": [],\n  "e": [\n    {\n      "f": "x"\n    }\n  ]\n}',
    );
  });
});
