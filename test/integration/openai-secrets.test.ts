/**
 * Credentials of `openaiModel` never leave a run, whatever a hostile or broken server quotes back: a key not
 * shaped like `sk-…` and every header value the user set (Azure's `api-key`, a proxy's bearer token), through
 * every path server text takes (an error status, a non-JSON 200, a stream's `error` and `response.failed`
 * events), into every sink: `detail`, `error`, warnings, the trace in memory, the JSONL trace file and a cassette.
 */
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { createLoop, type RunResult, type TraceEvent } from 'loopstate';
import { recordModel } from 'loopstate/cassette';
import { openaiModel, type OpenAIModelOptions } from 'loopstate/openai';
import { virtualClock } from 'loopstate/testing';
import { apiError, responsesEvents } from '../support/openai-fixtures.js';
import { useOpenAIServer, type OpenAITestServer, type ServerStep } from '../support/openai-server.js';

/** Neither key looks like a secret to the built-in redaction rules: only the adapter knows them. */
const KEY = 'azure7c0ffee5a1d2b3c4d5e6f708192a3b4c';
const HEADER_SECRET = 'gw-f00dface9876543210fedcbazyxw';
const PROXY_TOKEN = 'proxytok-31415926535897932384';

let server: OpenAITestServer;
useOpenAIServer((started) => (server = started));
const directory = mkdtempSync(join(tmpdir(), 'loopstate-openai-secrets-'));
afterAll(() => rmSync(directory, { recursive: true, force: true }));

interface Sinks {
  result: RunResult;
  events: TraceEvent[];
  traceFile: string;
  cassette: string;
}

let runs = 0;

/** One run with every sink on: onEvent, the trace file and a recorded cassette. */
async function runWith(steps: ServerStep[], options: Partial<OpenAIModelOptions> = {}): Promise<Sinks> {
  server.enqueue(...steps);
  runs++;
  const traceFile = join(directory, `run-${runs}.jsonl`);
  const cassetteFile = join(directory, `run-${runs}.cassette.json`);
  const events: TraceEvent[] = [];
  const model = openaiModel({
    model: 'gpt-4.1-mini',
    baseURL: server.baseURL,
    apiKey: KEY,
    timeoutMs: 5_000,
    idleTimeoutMs: 2_000,
    headers: { 'api-key': HEADER_SECRET, 'Proxy-Authorization': `Bearer ${PROXY_TOKEN}` },
    ...options,
  });
  const loop = createLoop({
    model: recordModel(model, cassetteFile),
    limits: { maxRetries: 1 },
    clock: virtualClock(),
    random: () => 0,
    trace: { file: traceFile, onEvent: (event) => events.push(event) },
  });
  const result = await loop.run({ goal: 'Say done.' });
  return { result, events, traceFile: readFileSync(traceFile, 'utf8'), cassette: readFileSync(cassetteFile, 'utf8') };
}

function expectNoSecret(sinks: Sinks): void {
  const { result, events, traceFile, cassette } = sinks;
  const sunk = {
    detail: result.detail,
    error: result.error,
    warnings: result.warnings,
    trace: result.trace,
    events,
    traceFile,
    cassette,
  };
  for (const [sink, text] of Object.entries(sunk)) {
    const serialised = typeof text === 'string' ? text : String(JSON.stringify(text));
    for (const secret of [KEY, HEADER_SECRET, PROXY_TOKEN]) {
      // Not even a part of one: a quote cut short must not keep half a secret.
      for (const part of [secret, secret.slice(0, 12), secret.slice(-10)])
        expect(serialised, `${sink} holds a secret`).not.toContain(part);
    }
  }
  // The failure is still said, the secret's place marked.
  expect(result.detail).toContain('[redacted]');
  expect(cassette).toContain('[redacted]');
}

/** What a server that quotes every credential it got says. */
const QUOTED = `key ${KEY}, api-key ${HEADER_SECRET}, proxy ${PROXY_TOKEN}`;
const times = (count: number, step: ServerStep): ServerStep[] => Array.from({ length: count }, () => step);
const responsesFault = (fault: unknown): ServerStep => ({
  kind: 'sse',
  events: [...responsesEvents({ text: 'half' }, { complete: false }), fault],
  done: false,
});

describe('server text quoting the credentials is scrubbed before any sink sees it', () => {
  it('an error status (401) quoting the key and the header values', async () => {
    const sinks = await runWith([apiError(401, `Unauthorized: ${QUOTED}`)]);
    expect(sinks.result.stopReason).toBe('fatal_error');
    expect(sinks.result.detail).toMatch(
      /HTTP 401 Unauthorized: key \[redacted\], api-key \[redacted\], proxy \[redacted\]/,
    );
    expectNoSecret(sinks);
  });

  it('a 200 whose body is not JSON (chat)', async () => {
    const sinks = await runWith([
      { kind: 'raw', contentType: 'text/plain', body: `${KEY} ${HEADER_SECRET} ${PROXY_TOKEN}` },
    ]);
    expect(sinks.result.stopReason).toBe('fatal_error');
    expect(sinks.result.detail).toMatch(/answered 200 with text starting "\[redacted\] \[redacted\] \[redacted\]"/);
    expectNoSecret(sinks);
  });

  it('a 200 whose body is not JSON (responses)', async () => {
    const sinks = await runWith(
      [{ kind: 'raw', contentType: 'text/plain', body: `${KEY} ${HEADER_SECRET} ${PROXY_TOKEN}` }],
      { api: 'responses' },
    );
    expect(sinks.result.stopReason).toBe('fatal_error');
    expectNoSecret(sinks);
  });

  it("the Responses API stream's error event", async () => {
    const fault = responsesFault({
      event: 'error',
      data: { type: 'error', code: 'server_error', message: `upstream refused ${QUOTED}` },
    });
    const sinks = await runWith(times(2, fault), { api: 'responses', stream: true });
    expect(sinks.result.stopReason).toBe('retries_exhausted');
    expect(sinks.result.detail).toMatch(/error in the middle of its streamed reply: upstream refused key \[redacted\]/);
    expectNoSecret(sinks);
  });

  it("the Responses API stream's response.failed event", async () => {
    const fault = responsesFault({
      event: 'response.failed',
      data: {
        type: 'response.failed',
        response: { status: 'failed', error: { code: 'server_error', message: `failed for ${QUOTED}` } },
      },
    });
    const sinks = await runWith(times(2, fault), { api: 'responses', stream: true });
    expect(sinks.result.stopReason).toBe('retries_exhausted');
    expect(sinks.result.detail).toMatch(/failed the response mid-stream: failed for key \[redacted\]/);
    expectNoSecret(sinks);
  });

  it('a chat stream error chunk', async () => {
    const fault: ServerStep = {
      kind: 'sse',
      events: [{ error: { message: `overloaded; ${QUOTED}`, type: 'server_error' } }],
    };
    const sinks = await runWith(times(2, fault), { stream: true });
    expect(sinks.result.stopReason).toBe('retries_exhausted');
    expectNoSecret(sinks);
  });

  it('still sends the header values, and the key, to the server', async () => {
    const sinks = await runWith([apiError(400, 'nothing quoted')]);
    expect(sinks.result.stopReason).toBe('fatal_error');
    expect(server.requests[0]?.headers).toMatchObject({
      'api-key': HEADER_SECRET,
      'proxy-authorization': `Bearer ${PROXY_TOKEN}`,
      authorization: `Bearer ${KEY}`,
    });
  });
});
