/**
 * A local OpenAI-compatible server for the provider's tests: the real `openai` client talks to it
 * over HTTP on 127.0.0.1. Each request takes the next scripted step (a reply, a stream or a fault)
 * and is recorded, so tests count HTTP requests exactly. node:http only.
 */
import { createServer, type IncomingMessage, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterAll, afterEach, beforeAll, expect } from 'vitest';

export type ServerStep =
  /** A JSON reply (a completion, or an error body with an error status). */
  | { kind: 'json'; status?: number; body: unknown; headers?: Record<string, string> }
  /**
   * Server-sent events: each entry is `data: <JSON>` (or `event:` + `data:` for `{ event, data }`), then `[DONE]` unless `done: false`;
   * then the response ends, or (`after`) the connection stays open with nothing more sent, or is reset.
   */
  | {
      kind: 'sse';
      events: readonly unknown[];
      done?: boolean;
      headers?: Record<string, string>;
      after?: 'end' | 'keep-open' | 'reset';
    }
  /** Any body with any content type: a malformed JSON body, an HTML page. */
  | { kind: 'raw'; status?: number; contentType: string; body: string; headers?: Record<string, string> }
  /** Accepts the request and never answers, not even the headers. */
  | { kind: 'stall-before-headers' }
  /** Sends 200 and its headers (and `partial` of the body), then nothing more. */
  | { kind: 'stall-after-headers'; contentType?: string; partial?: string }
  /** Sends 200, announces a longer body, sends `partial`, then resets the connection. */
  | { kind: 'reset-mid-body'; contentType?: string; partial?: string }
  /**
   * Sends 200, `prefix`, then filler as fast as the client reads it: until `contentLength` bytes (declared in
   * the headers) or, without it, for ever. `sent.bytes` counts what the socket accepted, so a test can bound it.
   */
  | { kind: 'huge'; contentType: string; prefix?: string; contentLength?: number; sent: { bytes: number } };

export interface RecordedRequest {
  method: string;
  path: string;
  headers: IncomingMessage['headers'];
  body: Record<string, unknown> | null;
}

export interface OpenAITestServer {
  /** `http://127.0.0.1:<port>/v1` */
  readonly baseURL: string;
  /** Every request received, in order. */
  readonly requests: readonly RecordedRequest[];
  /** Scripted steps not played yet. */
  readonly remaining: number;
  /** Appends steps; each request plays the next one. */
  enqueue(...steps: ServerStep[]): void;
  /** Forgets the steps left and the requests seen, so one test's leftovers never reach the next. */
  reset(): void;
  close(): Promise<void>;
}

/** What an exhausted script answers: a 400, which the loop never retries, so a test fails fast and says why. */
const EXHAUSTED: ServerStep = {
  kind: 'json',
  status: 400,
  body: { error: { message: 'test server: no scripted reply left', type: 'invalid_request_error' } },
};

function readBody(request: IncomingMessage): Promise<string> {
  return new Promise((resolve, reject) => {
    const chunks: Buffer[] = [];
    request.on('data', (chunk: Buffer) => chunks.push(chunk));
    request.on('end', () => resolve(Buffer.concat(chunks).toString('utf8')));
    request.on('error', reject);
  });
}

function play(step: ServerStep, response: ServerResponse): void {
  switch (step.kind) {
    case 'json':
      response.writeHead(step.status ?? 200, { 'content-type': 'application/json', ...step.headers });
      response.end(JSON.stringify(step.body));
      return;
    case 'raw':
      response.writeHead(step.status ?? 200, { 'content-type': step.contentType, ...step.headers });
      response.end(step.body);
      return;
    case 'sse': {
      response.writeHead(200, { 'content-type': 'text/event-stream', 'cache-control': 'no-cache', ...step.headers });
      for (const entry of step.events) {
        const framed =
          typeof entry === 'object' && entry !== null && 'event' in entry && 'data' in entry
            ? `event: ${String((entry as { event: unknown }).event)}\ndata: ${JSON.stringify((entry as { data: unknown }).data)}\n\n`
            : `data: ${JSON.stringify(entry)}\n\n`;
        response.write(framed);
      }
      if (step.done !== false) response.write('data: [DONE]\n\n');
      if (step.after === 'keep-open') return;
      if (step.after === 'reset') response.write('', () => setTimeout(() => response.socket?.destroy(), 5));
      else response.end();
      return;
    }
    case 'huge':
      writeHuge(step, response);
      return;
    case 'stall-before-headers':
      return;
    case 'stall-after-headers':
      response.writeHead(200, { 'content-type': step.contentType ?? 'application/json' });
      response.flushHeaders();
      if (step.partial !== undefined) response.write(step.partial);
      return;
    case 'reset-mid-body': {
      const partial = step.partial ?? '{"id":"chatcmpl-1","choices":[';
      response.writeHead(200, {
        'content-type': step.contentType ?? 'application/json',
        'content-length': String(partial.length + 1000),
      });
      response.write(partial, () => setTimeout(() => response.socket?.destroy(), 5));
      return;
    }
  }
}

const FILLER = Buffer.alloc(64 * 1024, 'a');

/** Writes as fast as the socket drains, never faster: what was sent is what the client took. */
function writeHuge(step: Extract<ServerStep, { kind: 'huge' }>, response: ServerResponse): void {
  const prefix = Buffer.from(step.prefix ?? '', 'utf8');
  response.writeHead(200, {
    'content-type': step.contentType,
    ...(step.contentLength === undefined ? {} : { 'content-length': String(step.contentLength) }),
  });
  const limit = step.contentLength ?? Number.POSITIVE_INFINITY;
  let closed = false;
  response.on('close', () => (closed = true));
  const pump = () => {
    while (!closed && step.sent.bytes < limit) {
      const piece =
        step.sent.bytes === 0 && prefix.length > 0
          ? prefix
          : FILLER.subarray(0, Math.min(FILLER.length, limit - step.sent.bytes));
      step.sent.bytes += piece.length;
      if (!response.write(piece)) return void response.once('drain', pump);
    }
    if (!closed) response.end();
  };
  pump();
}

/**
 * Starts the server on a free port of 127.0.0.1.
 * @example
 * const server = await startOpenAIServer(); server.enqueue({ kind: 'json', body: chatCompletion({ text: 'hi' }) });
 */
export async function startOpenAIServer(): Promise<OpenAITestServer> {
  const steps: ServerStep[] = [];
  const requests: RecordedRequest[] = [];
  const server = createServer((request, response) => {
    void readBody(request).then((text) => {
      let body: Record<string, unknown> | null;
      try {
        body = text === '' ? null : (JSON.parse(text) as Record<string, unknown>);
      } catch {
        body = null;
      }
      requests.push({ method: request.method ?? '', path: request.url ?? '', headers: request.headers, body });
      play(steps.shift() ?? EXHAUSTED, response);
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;
  return {
    baseURL: `http://127.0.0.1:${port}/v1`,
    requests,
    get remaining() {
      return steps.length;
    },
    enqueue: (...more) => void steps.push(...more),
    reset: () => {
      steps.length = 0;
      requests.length = 0;
    },
    close: () =>
      new Promise<void>((resolve) => {
        // Stalled requests hold their sockets open: close them, or close() waits for ever.
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  };
}

/**
 * The server for one test file: started before its tests, closed after them, and after each test every
 * scripted step must have been played (a step left over means the client made fewer requests than meant).
 * @example
 * let server: OpenAITestServer;
 * useOpenAIServer((started) => (server = started));
 */
export function useOpenAIServer(onStarted: (server: OpenAITestServer) => void): void {
  let server: OpenAITestServer | undefined;
  beforeAll(async () => {
    server = await startOpenAIServer();
    onStarted(server);
  });
  afterAll(async () => {
    await server?.close();
  });
  afterEach(() => {
    if (server === undefined) return;
    const left = server.remaining;
    server.reset();
    expect(left, 'scripted server steps left unplayed').toBe(0);
  });
}
