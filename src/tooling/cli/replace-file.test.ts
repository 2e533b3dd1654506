import { mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { replaceFile } from './replace-file.js';

const directory = mkdtempSync(join(tmpdir(), 'loopstate-replace-file-'));
afterAll(() => rmSync(directory, { recursive: true, force: true }));

describe('replaceFile', () => {
  it('writes the file in a folder it makes, and replaces it whole', () => {
    const file = join(directory, 'made', 'entry.js');
    replaceFile(file, 'first');
    replaceFile(file, Buffer.from('second'));
    expect(readFileSync(file, 'utf8')).toBe('second');
    expect(readdirSync(join(directory, 'made'))).toEqual(['entry.js']);
  });

  it("is not stopped by another writer's partial file named after the same process", () => {
    const file = join(directory, 'shared', 'entry.js');
    // What a writer naming partial files by the process id alone would collide with (here a folder, so it cannot).
    mkdirSync(`${file}.${process.pid}.partial`, { recursive: true });
    replaceFile(file, 'written');
    expect(readFileSync(file, 'utf8')).toBe('written');
  });

  it('removes its partial file when the rename fails, and throws', () => {
    const folder = join(directory, 'blocked');
    const file = join(folder, 'entry.js');
    // A non-empty folder where the file should be: the rename over it fails.
    mkdirSync(file, { recursive: true });
    writeFileSync(join(file, 'inside'), '');
    expect(() => replaceFile(file, 'lost')).toThrow();
    expect(readdirSync(folder)).toEqual(['entry.js']);
  });
});
