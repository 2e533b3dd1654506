/**
 * End to end: `loopstate console` on a real SQLite store, opened in Debian's chromium through
 * playwright-core. A refund approved from the page runs exactly once and its run completes; a rejection's
 * reason reaches the model; two tabs deciding one call: one continues the run, the other is told it was
 * decided already; an output waiting for review is accepted; a request without the token, or naming another host, is refused. Saves docs/console.png with LOOPSTATE_UPDATE_SCREENSHOTS=1.
 */
import { existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { createRequire } from 'node:module';
import { request } from 'node:http';
import { tmpdir } from 'node:os';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import type BetterSqlite3 from 'better-sqlite3';
import { chromium, type Browser, type Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createLoop } from 'loopstate';
import { sqliteStore } from 'loopstate/sqlite';
import { runCli } from '../../src/tooling/cli/run-cli.js';
import { startConsole } from '../../src/tooling/console/console-server.js';
import { openStoredLoop } from '../../src/tooling/console/stored-loop.js';
import config from '../fixtures/console/refund-loop.js';
import { CHROMIUM, ensureChromium } from '../support/ensure-chromium.js';
import { screenshotPath } from '../support/screenshot-path.js';

const repoRoot = resolve(dirname(fileURLToPath(import.meta.url)), '../..');
const screenshotFile = screenshotPath('console.png');
const LOOP_FILE = join(repoRoot, 'test', 'fixtures', 'console', 'refund-loop.ts');

let directory: string;
let browser: Browser | undefined;
const stop = new AbortController();
let exit: Promise<number> | undefined;
let url: string;

const lines = (path: string) => (existsSync(path) ? readFileSync(path, 'utf8').split('\n').filter(Boolean) : []);
const refunds = () => lines(process.env.REFUNDS_LOG!);
const modelSaw = () =>
  lines(process.env.MODEL_CALLS_LOG!).flatMap((line) =>
    (JSON.parse(line) as { content: unknown }[]).map((message) => String(message.content)),
  );

beforeAll(async () => {
  directory = mkdtempSync(join(tmpdir(), 'loopstate-console-browser-'));
  process.env.REFUNDS_LOG = join(directory, 'refunds.log');
  process.env.MODEL_CALLS_LOG = join(directory, 'model-calls.jsonl');
  const db = join(directory, 'loops.db');
  const store = sqliteStore({ path: db });
  const loop = createLoop({ ...config, store });
  for (const order of ['O-1', 'O-2', 'O-3'])
    expect((await loop.run({ goal: `Refund order ${order}`, runId: `refund-${order}` })).stopReason).toBe(
      'needs_human',
    );
  expect((await loop.run({ goal: 'Write a note for O-5', runId: 'note-O-5' })).pendingReview).not.toBeNull();
  await store.close();
  const out: string[] = [];
  exit = runCli(
    ['console', LOOP_FILE, '--store', 'loops.db'],
    { out: (text) => out.push(text), err: (text) => out.push(text), cwd: directory },
    { stop: stop.signal },
  );
  // The command prints its URL once it listens (expect.poll is for tests, not hooks).
  while (!out.some((line) => line.startsWith('Console: '))) {
    if (out.some((line) => line.startsWith('loopstate console:') && !line.includes(' on ')))
      throw new Error(out.join('\n'));
    await new Promise((resolveWait) => setTimeout(resolveWait, 50));
  }
  url = /http:\/\/127\.0\.0\.1:\d+\/\?token=[\w-]+/.exec(out.find((line) => line.startsWith('Console: '))!)![0];
}, 60_000);

afterAll(async () => {
  await browser?.close();
  stop.abort();
  expect(await exit).toBe(0);
  rmSync(directory, { recursive: true, force: true });
});

const row = (page: Page, runId: string) => page.locator(`tr[data-run="${runId}"]`);

// Each test waits on the page with polls of up to 30 s (a real browser, a server and runs resumed from SQLite);
// under the whole suite's load one test can pass the default 20 s before a poll gives up.
describe('the console in chromium', { timeout: 90_000 }, () => {
  // Chromium's first launch on a fresh machine (its font and profile caches) is not any one test's time.
  beforeAll(async () => {
    await ensureChromium();
    browser = await chromium.launch({ executablePath: CHROMIUM, args: ['--no-sandbox'] });
  }, 600_000);

  it('lists the waiting runs with their redacted arguments and buttons (the screenshot)', async () => {
    const page = await browser!.newPage();
    const errors: string[] = [];
    page.on('pageerror', (error) => errors.push(String(error)));
    await page.goto(url);
    await expect.poll(() => page.locator('tr[data-run]').count(), { timeout: 15_000 }).toBe(4);
    const first = row(page, 'refund-O-1');
    expect(await first.locator('.badge').textContent()).toBe('needs_human');
    const args = JSON.parse((await first.locator('pre.args').textContent())!) as unknown;
    expect(args).toEqual({ order_id: 'O-1', api_key: '[redacted]' });
    expect(await page.content()).not.toContain('sk-live');
    expect(errors).toEqual([]);
    await page.close();
  });

  it('approves a refund from the page: it runs exactly once and the run completes (the screenshot)', async () => {
    const page = await browser!.newPage({ viewport: { width: 1400, height: 780 } });
    await page.goto(url);
    const target = row(page, 'refund-O-1');
    await target.locator('button[data-action="approve"]').click();
    await expect.poll(() => target.locator('.badge').textContent(), { timeout: 30_000 }).toBe('succeeded');
    expect(await row(page, 'refund-O-1').locator('code').nth(1).textContent()).toBe('completed');
    expect(refunds().filter((order) => order === 'O-1')).toEqual(['O-1']);
    // One run done from the page, two waiting: what docs/console.png shows.
    await page.mouse.move(0, 0);
    mkdirSync(dirname(screenshotFile), { recursive: true });
    await page.screenshot({ path: screenshotFile });
    // Its run in the viewer, read from the store.
    const viewer = await browser!.newPage();
    await viewer.goto(
      await target
        .locator('a')
        .getAttribute('href')
        .then((href) => new URL(href!, url).toString()),
    );
    expect(await viewer.locator('#stop-reason code').textContent()).toBe('completed');
    expect(await viewer.locator('#step-table tbody tr').count()).toBe(2);
    await viewer.close();
    await page.close();
  });

  it('a rejection from the page reaches the model, and the refund never runs', async () => {
    const page = await browser!.newPage();
    await page.goto(url);
    const target = row(page, 'refund-O-3');
    // No reason: refused in the page, nothing sent.
    await target.locator('button[data-action="reject"]').click();
    await expect.poll(() => target.locator('.message.error').textContent()).toContain('needs a reason');
    await target.locator('input[data-reason]').fill('O-3 was refunded by hand yesterday');
    await target.locator('button[data-action="reject"]').click();
    await expect
      .poll(() => row(page, 'refund-O-3').locator('.badge').textContent(), { timeout: 30_000 })
      .toBe('succeeded');
    expect(modelSaw().some((text) => text.includes('O-3 was refunded by hand yesterday'))).toBe(true);
    expect(refunds()).not.toContain('O-3');
    await page.close();
  });

  it('accepts an output waiting for review from the page', async () => {
    const page = await browser!.newPage();
    await page.goto(url);
    const target = row(page, 'note-O-5');
    expect(await target.locator('pre.output').textContent()).toBe('Note: O-5 is on its way');
    expect(await target.locator('.pending').textContent()).toContain('a person signs notes off');
    await target.locator('button[data-action="accept"]').click();
    await expect
      .poll(() => row(page, 'note-O-5').locator('.badge').textContent(), { timeout: 30_000 })
      .toBe('succeeded');
    await page.close();
  });

  it('two tabs deciding one call: the run continues once, the other tab is told it was decided already', async () => {
    const tabs = [await browser!.newPage(), await browser!.newPage()];
    for (const tab of tabs) {
      await tab.goto(url);
      await expect.poll(() => row(tab, 'refund-O-2').locator('button[data-action="approve"]').count()).toBe(1);
    }
    await Promise.all(tabs.map((tab) => row(tab, 'refund-O-2').locator('button[data-action="approve"]').click()));
    await expect
      .poll(
        async () =>
          (await Promise.all(tabs.map((tab) => row(tab, 'refund-O-2').locator('.message.error').count()))).join(','),
        {
          timeout: 30_000,
        },
      )
      .toMatch(/^(1,0|0,1)$/);
    const told = await Promise.all(
      tabs.map((tab) => row(tab, 'refund-O-2').locator('.message.error').allTextContents()),
    );
    expect(told.flat().join(' ')).toContain('approval_already_decided');
    expect(told.flat().join(' ')).toContain('decided already');
    await expect
      .poll(() => row(tabs[0]!, 'refund-O-2').locator('.badge').textContent(), { timeout: 30_000 })
      .toBe('succeeded');
    expect(refunds().filter((order) => order === 'O-2')).toEqual(['O-2']);
    // A tab that opens now sees no button left to press.
    const late = await browser!.newPage();
    await late.goto(url);
    await expect.poll(() => row(late, 'refund-O-2').locator('.badge').textContent()).toBe('succeeded');
    expect(await row(late, 'refund-O-2').locator('button').count()).toBe(0);
    for (const tab of [...tabs, late]) await tab.close();
  });

  it('refuses the page without the token, and a request naming another host', async () => {
    const page = await browser!.newPage();
    const bare = new URL(url);
    bare.search = '';
    const response = await page.goto(bare.toString());
    expect(response?.status()).toBe(403);
    expect(await page.content()).not.toContain('refund-O-1');
    await page.close();
    const port = Number(new URL(url).port);
    const forged = await new Promise<{ status: number; body: string }>((done, fail) => {
      const sent = request(
        { host: '127.0.0.1', port, path: `/api/runs${new URL(url).search}`, headers: { host: `evil.example:${port}` } },
        (answer) => {
          let body = '';
          answer.setEncoding('utf8');
          answer.on('data', (chunk: string) => (body += chunk));
          answer.on('end', () => done({ status: answer.statusCode ?? 0, body }));
        },
      );
      sent.on('error', fail);
      sent.end();
    });
    expect(forged.status).toBe(421);
    expect(forged.body).not.toContain('refund-O-1');
  });
});

describe("the console's run page in chromium, its transcript damaged", () => {
  it('shows the trace, and says which transcript chunk is damaged (its seq)', async () => {
    const own = mkdtempSync(join(tmpdir(), 'loopstate-console-damaged-'));
    const db = join(own, 'loops.db');
    const store = sqliteStore({ path: db });
    // A snapshot (and its transcript chunk) at every step: the stop's record refers to the chain of chunks.
    const done = await createLoop({ ...config, store, durable: { snapshotEvery: 1 } }).run({
      goal: 'Write a note for O-9',
      runId: 'note-O-9',
    });
    expect(done.pendingReview).not.toBeNull();
    await store.close();
    const Database = createRequire(import.meta.url)('better-sqlite3') as typeof BetterSqlite3;
    const raw = new Database(db);
    const damaged = (
      raw
        .prepare("SELECT max(id & 4294967295) AS seq FROM journal WHERE run_id = ? AND kind = 'transcript'")
        .get('note-O-9') as { seq: number }
    ).seq;
    raw
      .prepare(`UPDATE journal SET body = '{"not a chunk', packed = NULL WHERE run_id = ? AND (id & 4294967295) = ?`)
      .run('note-O-9', damaged);
    raw.close();
    const stored = await openStoredLoop({ loopFile: LOOP_FILE, store: db });
    const running = await startConsole({ stored });
    const page = await browser!.newPage();
    try {
      const at = new URL(running.url);
      at.pathname = '/runs/note-O-9';
      const response = await page.goto(at.toString());
      expect(response?.status()).toBe(200);
      // The trace's steps are shown; the transcript's damage is said, with the chunk's seq.
      expect(await page.locator('#step-table tbody tr').count()).toBeGreaterThan(0);
      const notices = await page.locator('li.warn').allTextContents();
      expect(notices).toEqual(
        expect.arrayContaining([
          expect.stringMatching(
            new RegExp(`transcript of this run cannot be read \\(its trace can\\).*seq ${damaged}`),
          ),
        ]),
      );
    } finally {
      await page.close();
      await running.close();
      await stored.close();
      rmSync(own, { recursive: true, force: true });
    }
  });
});
