/**
 * Where a browser test saves its screenshot: the docs' copy only when asked (`LOOPSTATE_UPDATE_SCREENSHOTS=1`),
 * otherwise a scratch file, so a test run never leaves the checkout changed.
 */
import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';

const docs = resolve(dirname(fileURLToPath(import.meta.url)), '../../docs');

export function screenshotPath(name: string): string {
  if (process.env.LOOPSTATE_UPDATE_SCREENSHOTS === '1') return join(docs, name);
  return join(mkdtempSync(join(tmpdir(), 'loopstate-screenshot-')), name);
}
