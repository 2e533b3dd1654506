/**
 * `loopstate console`'s server, on 127.0.0.1 only: the page of a store's runs, the runs as JSON, each run
 * in the viewer (read from the store), and decisions as POSTs. Every request must name this server in its
 * Host header (421 otherwise, as the viewer's) and carry the per-launch token (403 otherwise), in the URL
 * (`?token=`) or the `x-loopstate-token` header; a decision must be a JSON POST with the header. A decision
 * is checked as `loop.resume` would check it, then started in the background: the model may be called
 * again, so the page shows the run as continuing and the list says how it stopped, or the typed error.
 */
import { randomBytes, timingSafeEqual } from 'node:crypto';
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { LoopConfigError, LoopstateError, StoreRecordError } from '../../index.js';
import { durableRunsOf, listStoredRuns, storedRunOf, STORED_RUN_STATUSES, type StoredRun } from '../../internal.js';
import { storedRunPage } from '../viewer/stored-run-view.js';
import { namesThisServer } from '../viewer/viewer-server.js';
import { escapeHtml } from '../viewer/statechart-svg.js';
import { consolePage } from './console-page.js';
import { approvalsOf, describeActionError, performAction, reviewOf, type RunAction } from './run-actions.js';
import { redactedRun, type StoredLoop } from './stored-loop.js';

/**
 * Options of `startConsole`.
 * @example
 * const options: ConsoleOptions = { stored: await openStoredLoop({ loopFile: 'loop.ts', store: 'loops.db' }) };
 */
export interface ConsoleOptions {
  stored: StoredLoop;
  /** 0 (default) picks a free port. */
  port?: number;
  /** Runs per page of the list (default 200); the page pages through the rest. */
  pageSize?: number;
}

/** What the console knows of a decision or command it started on a run. */
export type RunActivity =
  | { state: 'continuing'; action: RunAction['kind']; callId: string | null }
  | { state: 'done'; action: RunAction['kind']; status: string | null; stopReason: string | null; detail: string }
  | { state: 'refused'; action: RunAction['kind']; code: string; message: string };

/**
 * A running console.
 * @example
 * const console = await startConsole({ stored });
 * open(console.url); // the token is in it
 */
export interface RunningConsole {
  /** The page's address with the token: the one way in. */
  url: string;
  port: number;
  /** Resolves once every decision started so far has settled (a test's, or a shutdown's, wait). */
  settled(): Promise<void>;
  /** Stops serving; decisions still running are awaited first (their runs are left in a state a resume continues). */
  close(): Promise<void>;
}

const HEADERS = { 'cache-control': 'no-store', 'x-content-type-options': 'nosniff', 'referrer-policy': 'no-referrer' };
const PAGE_POLICY =
  "default-src 'none'; style-src 'unsafe-inline'; script-src 'unsafe-inline'; img-src data:; connect-src 'self'";
/** What an in-flight review decision is keyed by, beside call ids (a symbol-like text no call id is). */
const REVIEW = '\u0000review';
const MAX_BODY_BYTES = 64 * 1024;
const PAGE_SIZE = 200;

class RequestError extends Error {
  constructor(
    readonly status: number,
    readonly code: string,
    message: string,
  ) {
    super(message);
  }
}

/** Status of a typed error the loop threw on a decision. */
function statusOf(error: unknown): number {
  if (error instanceof LoopConfigError) return 400;
  if (error instanceof LoopstateError) return error.code === 'run_not_found' ? 404 : 409;
  return 500;
}

/**
 * Starts the console for a loop on its store and serves it on 127.0.0.1.
 * @example
 * const running = await startConsole({ stored: await openStoredLoop({ loopFile: 'loop.ts', store: 'loops.db' }) });
 * console.log(running.url);
 */
export async function startConsole(options: ConsoleOptions): Promise<RunningConsole> {
  const { stored } = options;
  const pageSize = options.pageSize ?? PAGE_SIZE;
  if (!Number.isInteger(pageSize) || pageSize < 1 || pageSize > 10_000)
    throw new LoopConfigError({
      issues: [{ path: 'pageSize', message: `expected a whole number from 1 to 10000, got ${String(pageSize)}` }],
    });
  const token = randomBytes(24).toString('base64url');
  const tokenBytes = Buffer.from(token);
  const activity = new Map<string, RunActivity>();
  const inFlight = new Map<string, { promise: Promise<void>; callId: string | null }>();
  const page = consolePage({ store: stored.storeLabel, loop: stored.loop.name });
  let port = 0;

  const hasToken = (request: IncomingMessage, url: URL) => {
    const given = request.headers['x-loopstate-token'] ?? url.searchParams.get('token') ?? '';
    const bytes = Buffer.from(Array.isArray(given) ? (given[0] ?? '') : given);
    return bytes.length === tokenBytes.length && timingSafeEqual(bytes, tokenBytes);
  };

  const sendJson = (response: ServerResponse, status: number, value: unknown) =>
    response
      .writeHead(status, { ...HEADERS, 'content-type': 'application/json; charset=utf-8' })
      .end(JSON.stringify(value));
  const sendText = (response: ServerResponse, status: number, text: string, extra: Record<string, string> = {}) =>
    response.writeHead(status, { ...HEADERS, 'content-type': 'text/plain; charset=utf-8', ...extra }).end(`${text}\n`);
  const sendHtml = (response: ServerResponse, html: string) =>
    response
      .writeHead(200, {
        ...HEADERS,
        'content-type': 'text/html; charset=utf-8',
        'content-security-policy': PAGE_POLICY,
      })
      .end(html);

  /** A run as the page shows it: the whole of it through the loop's redaction, with what this console is doing to it. */
  const shown = (run: StoredRun) => {
    const doing = activity.get(run.runId);
    return {
      ...redactedRun(stored, run),
      activity: doing === undefined ? null : (stored.redact(doing) as RunActivity),
    };
  };

  async function listRuns(url: URL) {
    const status = url.searchParams.get('status') ?? '';
    if (status !== '' && !(STORED_RUN_STATUSES as readonly string[]).includes(status))
      throw new RequestError(
        400,
        'invalid_request',
        `status: expected one of ${STORED_RUN_STATUSES.join(', ')}, got ${JSON.stringify(status)}`,
      );
    const after = url.searchParams.get('after');
    const page = await listStoredRuns(stored.store, {
      limit: pageSize,
      ...(status === '' ? {} : { status: status as StoredRun['status'] }),
      ...(after === null ? {} : { after }),
    });
    return { ...page, runs: page.runs.map(shown) };
  }

  async function runPage(runId: string): Promise<string | null> {
    const row = await stored.store.readRun(runId);
    if (row === null) return null;
    const runs = durableRunsOf(stored.loop);
    // The page shows the trace; the transcript is read apart, so that a damaged transcript chunk is said, not
    // made the page's failure (and a damaged trace chunk is the page's failure, whatever the transcript).
    const trace = await runs?.latestTrace(runId);
    if (trace === null || trace === undefined) {
      const run = storedRunOf({ ...row, finishedAt: null });
      return `<!doctype html><html lang="en"><head><meta charset="utf-8"><title>loopstate · ${escapeHtml(runId)}</title></head><body><h1>Run <code>${escapeHtml(runId)}</code></h1><p id="no-result">${escapeHtml(run.status)}: no result is recorded yet (the run is going, or its process died and a resume continues it).</p></body></html>`;
    }
    const notices = await runs!.latestMessages(runId).then(
      () => [],
      (error: unknown) => {
        if (!(error instanceof StoreRecordError)) throw error;
        return [`the transcript of this run cannot be read (its trace can): ${error.message}`];
      },
    );
    return storedRunPage(runId, trace, `store ${stored.storeLabel}`, notices);
  }

  /** The body's decision, checked field by field. */
  function actionOf(runId: string, body: unknown): RunAction {
    if (typeof body !== 'object' || body === null || Array.isArray(body))
      throw new RequestError(400, 'invalid_request', 'body: expected a JSON object with "kind"');
    const field = (name: string) => (body as Record<string, unknown>)[name];
    const text = (name: string, required: boolean): string | undefined => {
      const value = field(name);
      if (value === undefined && !required) return undefined;
      if (typeof value !== 'string' || value.trim() === '')
        throw new RequestError(400, 'invalid_request', `${name}: expected a non-empty string`);
      return value;
    };
    const hash = (name: string) => {
      const value = text(name, false);
      return value === undefined ? {} : { [name]: value };
    };
    switch (field('kind')) {
      case 'approve':
        return { kind: 'approve', runId, callId: text('callId', true)!, ...hash('argumentsHash') };
      case 'reject':
        return {
          kind: 'reject',
          runId,
          callId: text('callId', true)!,
          reason: text('reason', true)!,
          ...hash('argumentsHash'),
        };
      case 'accept':
        return { kind: 'review', runId, accept: true, ...hash('outputHash'), ...hash('reviewId') };
      case 'reject-output':
        return {
          kind: 'review',
          runId,
          accept: false,
          reason: text('reason', true)!,
          ...hash('outputHash'),
          ...hash('reviewId'),
        };
      case 'cancel':
        return { kind: 'cancel', runId };
      case 'resume':
        return { kind: 'resume', runId };
      default:
        throw new RequestError(
          400,
          'invalid_request',
          `kind: expected approve, reject, accept, reject-output, cancel or resume, got ${JSON.stringify(field('kind'))}`,
        );
    }
  }

  async function decide(runId: string, body: unknown) {
    const action = actionOf(runId, body);
    const callId = action.kind === 'approve' || action.kind === 'reject' ? action.callId : null;
    const running = inFlight.get(runId);
    if (running !== undefined) {
      if (action.kind === 'review' && running.callId === REVIEW)
        throw new RequestError(
          409,
          'review_already_decided',
          `the output of run ${runId} was decided already (the run is continuing with that decision)`,
        );
      if (callId !== null && running.callId === callId)
        throw new RequestError(
          409,
          'approval_already_decided',
          `call ${callId} of run ${runId} was decided already (the run is continuing with that decision)`,
        );
      throw new RequestError(
        409,
        'run_busy',
        `run ${runId} is being continued by an earlier decision; wait for it to stop`,
      );
    }
    // Held before the first await: two tabs deciding at once are told apart here, in order.
    let release: () => void = () => undefined;
    const decided = action.kind === 'review' ? REVIEW : callId;
    inFlight.set(runId, { promise: new Promise<void>((resolve) => (release = resolve)), callId: decided });
    try {
      if ((await stored.store.readRun(runId)) === null)
        throw new RequestError(404, 'run_not_found', `no run ${runId} in the store ${stored.storeLabel}`);
      // Checked as resume checks them, before anything changes; the very decision taken already is "decided" too.
      if (callId !== null && (await stored.checkDecisions(runId, approvalsOf(action))).retried)
        throw new RequestError(
          409,
          'approval_already_decided',
          `call ${callId} of run ${runId} was decided already (with this same decision); the run went on`,
        );
      if (action.kind === 'review' && (await stored.checkReview(runId, reviewOf(action))).retried)
        throw new RequestError(
          409,
          'review_already_decided',
          `the output of run ${runId} was reviewed already (with this same decision); the run went on`,
        );
    } catch (error) {
      inFlight.delete(runId);
      release();
      throw error;
    }
    activity.set(runId, { state: 'continuing', action: action.kind, callId });
    const promise = performAction(stored.loop, action).then(
      (result) => {
        activity.set(runId, {
          state: 'done',
          action: action.kind,
          status: result?.status ?? null,
          stopReason: result?.stopReason ?? null,
          detail:
            result === null ? 'cancel requested: the process driving it stops it at its next commit' : result.detail,
        });
      },
      (error: unknown) => {
        activity.set(runId, { state: 'refused', action: action.kind, ...describeActionError(error) });
      },
    );
    inFlight.set(runId, {
      promise: promise.finally(() => {
        inFlight.delete(runId);
        release();
      }),
      callId: decided,
    });
    return { started: true, runId, action: action.kind };
  }

  async function readBody(request: IncomingMessage): Promise<unknown> {
    if (!/^application\/json\b/i.test(request.headers['content-type'] ?? ''))
      throw new RequestError(415, 'invalid_request', 'content-type: expected application/json');
    const chunks: Buffer[] = [];
    let size = 0;
    for await (const chunk of request as AsyncIterable<Buffer>) {
      size += chunk.length;
      if (size > MAX_BODY_BYTES)
        throw new RequestError(413, 'invalid_request', `body: expected at most ${MAX_BODY_BYTES} bytes`);
      chunks.push(chunk);
    }
    try {
      return JSON.parse(Buffer.concat(chunks).toString('utf8')) as unknown;
    } catch {
      throw new RequestError(400, 'invalid_request', 'body: expected JSON');
    }
  }

  async function handle(request: IncomingMessage, response: ServerResponse): Promise<void> {
    const url = new URL(request.url ?? '/', 'http://127.0.0.1');
    if (!namesThisServer(request, port))
      return void sendText(
        response,
        421,
        `loopstate console answers only to http://127.0.0.1:${port}/ (or localhost:${port}, [::1]:${port}); this request named another host`,
      );
    if (!hasToken(request, url))
      return void sendText(
        response,
        403,
        'loopstate console: this request has no valid token; open the URL the console printed',
      );
    const path = url.pathname;
    const action = /^\/api\/runs\/([^/]+)\/actions$/.exec(path);
    if (action !== null) {
      if (request.method !== 'POST') return void sendText(response, 405, 'expected POST', { allow: 'POST' });
      // A decision carries the token in its header, never only in a URL a page could be tricked into loading.
      if (request.headers['x-loopstate-token'] === undefined)
        return void sendText(response, 403, 'loopstate console: a decision needs the x-loopstate-token header');
      return void sendJson(response, 202, await decide(decodeURIComponent(action[1]!), await readBody(request)));
    }
    if (request.method !== 'GET' && request.method !== 'HEAD')
      return void sendText(response, 405, 'expected GET', { allow: 'GET, HEAD' });
    if (path === '/' || path === '/index.html') return void sendHtml(response, page);
    if (path === '/api/runs') return void sendJson(response, 200, await listRuns(url));
    const run = /^\/runs\/([^/]+)$/.exec(path);
    if (run !== null) {
      const html = await runPage(decodeURIComponent(run[1]!));
      if (html === null) return void sendText(response, 404, 'no such run in the store');
      return void sendHtml(response, html);
    }
    sendText(response, 404, 'not found');
  }

  const server: Server = createServer((request, response) => {
    handle(request, response).catch((error: unknown) => {
      const status = error instanceof RequestError ? error.status : statusOf(error);
      const code = error instanceof RequestError ? error.code : describeActionError(error).code;
      const message = error instanceof RequestError ? error.message : describeActionError(error).message;
      if (!response.headersSent) sendJson(response, status, { error: { code, message } });
      else response.destroy();
    });
  });
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(options.port ?? 0, '127.0.0.1', () => {
      server.off('error', reject);
      resolve();
    });
  });
  port = (server.address() as AddressInfo).port;
  const settled = async () => {
    while (inFlight.size > 0) await Promise.all([...inFlight.values()].map((entry) => entry.promise));
  };
  return {
    url: `http://127.0.0.1:${port}/?token=${token}`,
    port,
    settled,
    close: async () => {
      await new Promise<void>((resolve) => {
        server.close(() => resolve());
        server.closeAllConnections();
      });
      await settled();
    },
  };
}
