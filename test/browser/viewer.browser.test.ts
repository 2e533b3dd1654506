/**
 * End to end: `loopstate inspect` on a real trace, opened in Debian's chromium through playwright-core
 * (never a downloaded browser). Checks the statechart, the highlighted path, the time-travel slider and
 * the step table, and saves the README's screenshot (to docs/viewer.png with LOOPSTATE_UPDATE_SCREENSHOTS=1).
 */
import { mkdirSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { chromium, type Browser } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { loopMachine } from '../../machines/index.js';
import { runCli } from '../../src/tooling/cli/run-cli.js';
import { statechartGraph } from '../../src/tooling/viewer/statechart-graph.js';
import { writeSampleTrace } from '../support/sample-run.js';
import { CHROMIUM, ensureChromium } from '../support/ensure-chromium.js';
import { screenshotPath } from '../support/screenshot-path.js';

const screenshotFile = screenshotPath('viewer.png');

let directory: string;
let browser: Browser | undefined;
const stop = new AbortController();
let exit: Promise<number> | undefined;

beforeAll(() => {
  directory = mkdtempSync(join(tmpdir(), 'loopstate-viewer-browser-'));
});
afterAll(async () => {
  await browser?.close();
  stop.abort();
  await exit;
  rmSync(directory, { recursive: true, force: true });
});

describe('the viewer in chromium', () => {
  // Installed with apt when missing and the suite runs as root; a failure, never a skip, otherwise.
  beforeAll(() => ensureChromium(), 600_000);

  it('shows the statechart, the path taken, time travel and the step table', async () => {
    const tracePath = join(directory, 'run.jsonl');
    await writeSampleTrace(tracePath);
    const out: string[] = [];
    exit = runCli(
      ['inspect', tracePath],
      { out: (text) => out.push(text), err: (text) => out.push(text) },
      { stop: stop.signal },
    );
    await expect.poll(() => out.find((line) => line.startsWith('Viewer: ')), { timeout: 15_000 }).toBeDefined();
    const url = /http:\/\/127\.0\.0\.1:\d+\//.exec(out.find((line) => line.startsWith('Viewer: '))!)![0];

    browser = await chromium.launch({ executablePath: CHROMIUM, args: ['--no-sandbox'] });
    const page = await browser.newPage({ viewport: { width: 1800, height: 1100 } });
    const requests: string[] = [];
    const errors: string[] = [];
    page.on('request', (request) => requests.push(request.url()));
    page.on('pageerror', (error) => errors.push(String(error)));
    await page.goto(url);

    // The statechart: every state of the machine, drawn.
    const states = statechartGraph(loopMachine).states.map((state) => state.id);
    expect(
      await page
        .locator('#statechart [data-state]')
        .evaluateAll((nodes) => nodes.map((node) => node.getAttribute('data-state'))),
    ).toEqual(states);
    expect(await page.locator('#statechart [data-state="RUNNING.deciding"] rect').first().isVisible()).toBe(true);

    // The path taken: exactly the edges the run went through, with how often.
    const taken = await page
      .locator('#statechart .edge.taken')
      .evaluateAll((edges) =>
        Object.fromEntries(
          edges.map((edge) => [edge.getAttribute('data-edge'), Number(edge.getAttribute('data-count'))]),
        ),
      );
    expect(taken).toMatchObject({
      'READY->RUNNING': 1,
      'RUNNING.gate->RUNNING.deciding': 3,
      'RUNNING.backoffChecked->RETRY.backingOff': 1,
      'RUNNING.deciding->RUNNING.acting': 1,
      'RUNNING.routingEvaluation->RETRY.reflecting': 1,
      'RUNNING.routingEvaluation->SUCCESS': 1,
      'SUCCESS->TERMINATED': 1,
    });
    expect(taken).not.toHaveProperty('RUNNING.gate->TERMINATED');
    // The rest is drawn muted: a plain arrow is a lighter, thinner line than a taken one.
    // (Evaluated in the page: this project's TypeScript has no DOM types.)
    const stroke = (selector: string) =>
      page.evaluate<string[]>(
        `(() => { const style = getComputedStyle(document.querySelector(${JSON.stringify(selector)})); return [style.stroke, style.strokeWidth]; })()`,
      );
    expect(await stroke('#statechart .edge.route:not(.taken) path')).toEqual(['rgb(195, 200, 212)', '1.1px']);
    expect(await stroke('#statechart .edge.route.taken:not(.current) path')).toEqual(['rgb(47, 111, 222)', '3px']);

    // Legible at the default size: every label and state name renders at 12 px or more.
    const renderedSizes = await page.evaluate<number[]>(`(() => {
      const svg = document.getElementById('statechart');
      const scale = svg.getBoundingClientRect().width / svg.viewBox.baseVal.width;
      return [...svg.querySelectorAll('.edge-label, .state text')].map((node) => Number.parseFloat(getComputedStyle(node).fontSize) * scale);
    })()`);
    expect(renderedSizes.length).toBeGreaterThan(30);
    expect(Math.min(...renderedSizes)).toBeGreaterThanOrEqual(12);
    // Cancel, deadline and fault are one legend entry, not an arrow from every state.
    expect(await page.locator('#statechart .legend').textContent()).toContain(
      'to TERMINATED: run.cancelRequested, run.deadlineReached, run.faulted',
    );
    expect(await page.locator('#statechart .edge.interruption path').count()).toBe(0);
    expect(await page.locator('#statechart .legend .edge.interruption').count()).toBe(3);

    // Opens at the end of the run.
    const slider = page.locator('#step-slider');
    expect(await slider.getAttribute('max')).toBe('9');
    await expect.poll(() => page.locator('#active-state').textContent()).toBe('TERMINATED');
    expect(await page.locator('#statechart .state.active').getAttribute('data-state')).toBe('TERMINATED');
    const budget = (label: string) => page.locator('#budgets tr', { hasText: label }).locator('td.spent').textContent();
    const counter = (label: string) =>
      page.locator('#counters tr', { hasText: label }).locator('td.spent').textContent();
    expect(await budget('Input tokens')).toBe('770');
    expect(await budget('Steps')).toBe('3');
    expect(await page.locator('#stop-reason').textContent()).toContain(
      'completed — Every task produced an answer its evaluators accepted',
    );

    // Moving the slider travels back: the state, the route just taken, the budgets and counters follow.
    await slider.fill('4');
    expect(await page.locator('#active-state').textContent()).toBe('RUNNING.acting');
    expect(await page.locator('#statechart .state.active').getAttribute('data-state')).toBe('RUNNING.acting');
    expect(
      await page
        .locator('#statechart .edge.current')
        .evaluateAll((edges) => edges.map((edge) => edge.getAttribute('data-edge'))),
    ).toEqual(['RUNNING.deciding->RUNNING.acting']);
    expect(await budget('Input tokens')).toBe('180');
    expect(await budget('Steps')).toBe('1');
    expect(await counter('Transport retries')).toBe('1');
    expect(await counter('Reflection retries')).toBe('0');
    await slider.fill('0');
    expect(await page.locator('#active-state').textContent()).toBe('READY');
    expect(await budget('Input tokens')).toBe('0');

    // The step table; a row click travels to its step.
    const rows = page.locator('#step-table tbody tr');
    expect(await rows.count()).toBe(3);
    expect(await rows.nth(0).textContent()).toMatch(
      /get_order_status.*ok.*180 \/ 24.*\$0\.000110.*350 ms.*1 \(rate_limited/,
    );
    expect(await rows.nth(1).textContent()).toMatch(/rejected.*schema: output is not valid JSON/);
    expect(await rows.nth(2).textContent()).toContain('passed');
    await rows.nth(1).click();
    expect(await page.locator('#active-state').textContent()).toBe('RUNNING.evaluating');
    expect(await rows.nth(1).getAttribute('class')).toBe('current');

    // The reflection: the frame the README's screenshot shows.
    await slider.fill('7');
    expect(await counter('Reflection retries')).toBe('1');
    expect(await page.locator('#statechart .edge.current').count()).toBe(4);
    mkdirSync(dirname(screenshotFile), { recursive: true });
    await page.screenshot({ path: screenshotFile, fullPage: true });

    expect(errors).toEqual([]);
    // Nothing but the local server was asked for anything.
    expect(requests.filter((requested) => !requested.startsWith(url))).toEqual([]);
  }, 40_000);
});
