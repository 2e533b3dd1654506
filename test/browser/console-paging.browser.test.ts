/**
 * The console page pages through more runs than one page holds: a real SQLite store with seven runs, a
 * console of three runs a page, opened in Debian's chromium through playwright-core. The page says more
 * runs exist, goes to the next pages and back, and a status filter starts again from the first page.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { chromium, type Browser, type Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createLoop } from 'loopstate';
import { sqliteStore } from 'loopstate/sqlite';
import config from '../fixtures/console/refund-loop.js';
import { startConsole, type RunningConsole } from '../../src/tooling/console/console-server.js';
import { openStoredLoop, type StoredLoop } from '../../src/tooling/console/stored-loop.js';
import { CHROMIUM, ensureChromium } from '../support/ensure-chromium.js';

const directory = mkdtempSync(join(tmpdir(), 'loopstate-console-paging-'));
let stored: StoredLoop;
let running: RunningConsole;
let browser: Browser | undefined;

beforeAll(async () => {
  const db = join(directory, 'loops.db');
  const store = sqliteStore({ path: db });
  const loop = createLoop({ ...config, store });
  for (const order of ['O-1', 'O-2', 'O-3', 'O-4', 'O-5', 'O-6'])
    await loop.run({ goal: `Refund order ${order}`, runId: `run-${order}` });
  await loop.run({ goal: 'Refund order O-7', runId: 'run-O-7' });
  await loop.resume('run-O-7', { approvals: { 'call-O-7': { approve: true } } });
  await store.close();
  stored = await openStoredLoop({ loopFile: resolve('test/fixtures/console/refund-loop.ts'), store: db });
  running = await startConsole({ stored, pageSize: 3 });
}, 60_000);

afterAll(async () => {
  await browser?.close();
  await running?.close();
  await stored?.close();
  rmSync(directory, { recursive: true, force: true });
});

const shownRuns = (page: Page) =>
  page.locator('tr[data-run]').evaluateAll((rows) => rows.map((row) => row.getAttribute('data-run')));

describe('the console page past one page of runs', () => {
  // Chromium's first launch on a fresh machine (its font and profile caches) is not any one test's time.
  beforeAll(async () => {
    await ensureChromium();
    browser = await chromium.launch({ executablePath: CHROMIUM, args: ['--no-sandbox'] });
  }, 600_000);

  it('says more runs exist, pages forward and back, and a filter starts from the first page', async () => {
    const page = await browser!.newPage();
    const errors: string[] = [];
    page.on('pageerror', (error) => errors.push(String(error)));
    await page.goto(running.url);
    await expect.poll(() => shownRuns(page), { timeout: 15_000 }).toEqual(['run-O-1', 'run-O-2', 'run-O-3']);
    expect(await page.locator('#page-note').textContent()).toBe('page 1 · more runs exist');
    expect(await page.locator('#newer').isHidden()).toBe(true);
    await page.locator('#older').click();
    await expect.poll(() => shownRuns(page), { timeout: 15_000 }).toEqual(['run-O-4', 'run-O-5', 'run-O-6']);
    await page.locator('#older').click();
    await expect.poll(() => shownRuns(page), { timeout: 15_000 }).toEqual(['run-O-7']);
    expect(await page.locator('#page-note').textContent()).toBe('page 3 · the last page');
    expect(await page.locator('#older').isHidden()).toBe(true);
    // Still on the last page after the next refresh (the page is kept, not reset).
    const refreshed = await page.locator('#refreshed').textContent();
    await expect.poll(() => page.locator('#refreshed').textContent(), { timeout: 15_000 }).not.toBe(refreshed);
    expect(await shownRuns(page)).toEqual(['run-O-7']);
    await page.locator('#newer').click();
    await expect.poll(() => shownRuns(page), { timeout: 15_000 }).toEqual(['run-O-4', 'run-O-5', 'run-O-6']);
    await page.locator('#status-filter').selectOption('succeeded');
    await expect.poll(() => shownRuns(page), { timeout: 15_000 }).toEqual(['run-O-7']);
    expect(await page.locator('#page-note').textContent()).toBe('');
    expect(errors).toEqual([]);
    await page.close();
  });

  it('refuses a page size that is not a whole number from 1 to 10000', async () => {
    for (const pageSize of [0, 1.5, 10_001])
      await expect(startConsole({ stored, pageSize })).rejects.toThrow(/pageSize: expected a whole number/);
  });
});
