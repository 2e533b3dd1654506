/**
 * `loopstate inspect`'s server: builds the page for one trace once (layout included), then serves it
 * on 127.0.0.1 only. `/` is the page, `/timeline.json` the derived data; nothing else. A request must name
 * this server in its Host header (`127.0.0.1:<port>`, `localhost:<port>` or `[::1]:<port>`): a web page
 * on another site that rebinds its own name to 127.0.0.1 sends its own name, and is refused.
 */
import { createServer, type IncomingMessage, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { loopMachine } from '../../../machines/index.js';
import { readRunTrace, type TracedRun } from './read-trace.js';
import { buildTimeline, type RunTimeline } from './run-timeline.js';
import { statechartGraph } from './statechart-graph.js';
import { shippedStatechartLayout } from './shipped-statechart-layout.js';
import { viewerPage } from './viewer-page.js';

export interface ViewerOptions {
  /** The JSONL trace to show. */
  tracePath: string;
  /** Which run, when the file holds several. */
  runId?: string;
  /** 0 (default) picks a free port. */
  port?: number;
}

export interface RunningViewer {
  url: string;
  timeline: RunTimeline;
  /** The trace file's other runs, when it holds several (the latest is shown unless `runId` chose one). */
  otherRuns: TracedRun[];
  /** What the reader left out of the file, and why (bad lines by number, what a newer version added). */
  skipped: string[];
  close(): Promise<void>;
}

/**
 * The Host header is this server's own address, by any of its local names (case aside): a page on another
 * site that rebinds its name to 127.0.0.1 sends its own name. Shared with the console's server.
 * @example
 * if (!namesThisServer(request, port)) response.writeHead(421).end();
 */
export function namesThisServer(request: IncomingMessage, port: number): boolean {
  const host = request.headers.host?.toLowerCase();
  return host === `127.0.0.1:${port}` || host === `localhost:${port}` || host === `[::1]:${port}`;
}

/**
 * Reads the trace (a trace with nothing to show throws a `LoopstateError` with code `invalid_trace` before anything listens), lays out the
 * statechart and serves the page on 127.0.0.1.
 * @example
 * const viewer = await startViewer({ tracePath: 'run.jsonl' });
 * console.log(viewer.url);
 * await viewer.close();
 */
export async function startViewer(options: ViewerOptions): Promise<RunningViewer> {
  const trace = await readRunTrace(options.tracePath, options.runId);
  const graph = statechartGraph(loopMachine);
  const timeline = buildTimeline(trace, graph);
  const page = viewerPage(shippedStatechartLayout(), timeline);
  const json = JSON.stringify(timeline);
  const server: Server = createServer((request, response) => {
    const path = new URL(request.url ?? '/', 'http://127.0.0.1').pathname;
    const headers = { 'cache-control': 'no-store', 'x-content-type-options': 'nosniff' };
    const port = (server.address() as AddressInfo).port;
    if (!namesThisServer(request, port)) {
      response
        .writeHead(421, { ...headers, 'content-type': 'text/plain; charset=utf-8' })
        .end(
          `loopstate inspect answers only to http://127.0.0.1:${port}/ (or localhost:${port}, [::1]:${port}); this request named another host\n`,
        );
    } else if (request.method !== 'GET' && request.method !== 'HEAD') {
      response.writeHead(405, { ...headers, allow: 'GET, HEAD' }).end();
    } else if (path === '/' || path === '/index.html') {
      // The page needs nothing from anywhere: say so to the browser too.
      response
        .writeHead(200, {
          ...headers,
          'content-type': 'text/html; charset=utf-8',
          'content-security-policy':
            "default-src 'none'; style-src 'unsafe-inline'; script-src 'unsafe-inline'; img-src data:",
        })
        .end(page);
    } else if (path === '/timeline.json') {
      response.writeHead(200, { ...headers, 'content-type': 'application/json; charset=utf-8' }).end(json);
    } else {
      response.writeHead(404, { ...headers, 'content-type': 'text/plain; charset=utf-8' }).end('not found\n');
    }
  });
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(options.port ?? 0, '127.0.0.1', () => {
      server.off('error', reject);
      resolve();
    });
  });
  const { port } = server.address() as AddressInfo;
  return {
    url: `http://127.0.0.1:${port}/`,
    timeline,
    otherRuns: trace.otherRuns,
    skipped: trace.skipped,
    close: () =>
      new Promise<void>((resolve) => {
        server.close(() => resolve());
        server.closeAllConnections();
      }),
  };
}
