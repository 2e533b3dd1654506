import { mkdtempSync, readdirSync, rmSync, utimesSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { MAX_TRANSPILED_ENTRIES, readTranspiled, writeTranspiled } from './transpile-cache.js';

const directory = mkdtempSync(join(tmpdir(), 'loopstate-transpile-cache-'));
afterAll(() => rmSync(directory, { recursive: true, force: true }));

describe('the transpile cache', () => {
  it('keeps at most its bound of files, removing the oldest when it writes one more', () => {
    const folder = join(directory, 'bounded');
    for (const [index, name] of ['a', 'b', 'c', 'd'].entries()) {
      expect(writeTranspiled(join(folder, `${name}.js`), `export const ${name} = 1;\n`, 10)).toBe(true);
      // Oldest first: a written 1985, b 1986, …
      const time = new Date(Date.UTC(1985 + index, 0, 1));
      utimesSync(join(folder, `${name}.js`), time, time);
    }
    expect(writeTranspiled(join(folder, 'e.js'), 'export const e = 1;\n', 3)).toBe(true);
    expect(readdirSync(folder).sort()).toEqual(['c.js', 'd.js', 'e.js']);
    expect(readTranspiled(join(folder, 'e.js'))).toBe('export const e = 1;\n');
    expect(MAX_TRANSPILED_ENTRIES).toBe(256);
  });
});
