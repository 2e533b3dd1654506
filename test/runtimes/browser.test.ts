/**
 * The core in a browser: the portable loop (createLoop, defineTool, scriptedModel, evaluators, a durable run on
 * the memory store), bundled with vite for the browser with every Node built-in refused, served by a real HTTP
 * server on 127.0.0.1 and run in Debian's chromium through playwright-core (never a downloaded browser).
 */
import { mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { createServer, type Server } from 'node:http';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { chromium, type Browser } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { CHROMIUM, ensureChromium } from '../support/ensure-chromium.js';
import { bundlePortableLoop, EXPECTED_RESULT, portableResult } from './bundle-portable-loop.js';

let directory: string;
let server: Server | undefined;
let browser: Browser | undefined;

beforeAll(() => {
  directory = mkdtempSync(join(tmpdir(), 'loopstate-browser-runtime-'));
  ensureChromium();
}, 600_000);
afterAll(async () => {
  await browser?.close();
  await new Promise((resolve) => (server === undefined ? resolve(undefined) : server.close(resolve)));
  rmSync(directory, { recursive: true, force: true });
});

/**
 * Serves the page and the bundle's files, as a static host serves a built app: the entry and the chunks it imports
 * on demand (the core loads `@opentelemetry/api` at its first run); anything else is a 404 the test would see as a
 * failed request.
 */
async function serve(bundle: string): Promise<string> {
  const page =
    '<!doctype html><html><head><meta charset="utf-8"><title>loopstate</title><script type="module" src="/portable-loop.mjs"></script></head><body></body></html>';
  const files = new Set(readdirSync(dirname(bundle)).filter((name) => /\.m?js$/.test(name)));
  server = createServer((request, response) => {
    const name = request.url?.slice(1) ?? '';
    if (request.url === '/') response.writeHead(200, { 'content-type': 'text/html' }).end(page);
    else if (files.has(name))
      response.writeHead(200, { 'content-type': 'text/javascript' }).end(readFileSync(join(dirname(bundle), name)));
    else response.writeHead(404).end();
  });
  await new Promise<void>((resolve) => server!.listen(0, '127.0.0.1', resolve));
  const address = server.address();
  if (address === null || typeof address === 'string') throw new Error('the test server has no port');
  return `http://127.0.0.1:${address.port}/`;
}

describe('the core in chromium', () => {
  it('runs the scripted loop to the same stop reasons and outputs as Node', async () => {
    const url = await serve(await bundlePortableLoop(join(directory, 'bundle')));
    browser = await chromium.launch({ executablePath: CHROMIUM, args: ['--no-sandbox'] });
    const page = await browser.newPage();
    const lines: string[] = [];
    const errors: string[] = [];
    page.on('console', (message) => lines.push(message.text()));
    page.on('pageerror', (error) => errors.push(String(error)));
    page.on('requestfailed', (request) => errors.push(`request failed: ${request.url()}`));
    await page.goto(url);
    await expect
      .poll(() => lines.some((line) => line.startsWith('loopstate-result ') || line.startsWith('loopstate-error ')), {
        timeout: 30_000,
      })
      .toBe(true);
    expect(errors).toEqual([]);
    expect(portableResult(lines.join('\n'))).toEqual(EXPECTED_RESULT);
    // The page has no `process`: the run above went through the runtime probe's fallbacks (no pid, no host name).
    expect(await page.evaluate(() => typeof (globalThis as { process?: unknown }).process)).toBe('undefined');
  }, 120_000);

  it('refuses to bundle for the browser anything that imports a Node built-in (the check above is not vacuous)', async () => {
    const entry = join(directory, 'node-only.ts');
    writeFileSync(entry, "import { readTraceFile } from 'loopstate/node';\nconsole.log(readTraceFile('run.jsonl'));\n");
    await expect(bundlePortableLoop(join(directory, 'refused'), entry)).rejects.toThrow(
      /read-trace-file\.ts imports the Node built-in node:fs/,
    );
  }, 120_000);
});
