import { readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import { LOOPSTATE_VERSION } from './version.js';

describe('LOOPSTATE_VERSION', () => {
  it("is package.json's version (bump both together)", () => {
    const manifest = JSON.parse(readFileSync(new URL('../../package.json', import.meta.url), 'utf8')) as {
      version: string;
    };
    expect(LOOPSTATE_VERSION).toBe(manifest.version);
  });
});
