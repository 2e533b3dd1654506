/**
 * Redirects of the OpenAI server, over real HTTP. By default none is followed: a redirect to another origin
 * would carry the conversation and the credentials there (307, 308), or turn the POST into a GET and take
 * another server's answer for the reply (301, 302). `redirects: 'same-origin'` follows those that stay on
 * the server's origin, re-sending the same request; one that leaves it is still refused.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createLoop, type RunResult } from 'loopstate';
import { openaiModel, type OpenAIModelOptions } from 'loopstate/openai';
import { virtualClock } from 'loopstate/testing';
import { replyStep } from '../support/openai-fixtures.js';
import {
  startOpenAIServer,
  useOpenAIServer,
  type OpenAITestServer,
  type ServerStep,
} from '../support/openai-server.js';

const KEY = 'sk-test-redirects-0123456789abcdef';
const HEADER_SECRET = 'gateway-credential-0123456789';

let server: OpenAITestServer;
useOpenAIServer((started) => (server = started));
/** Another origin: another port of 127.0.0.1. */
let elsewhere: OpenAITestServer;
beforeAll(async () => {
  elsewhere = await startOpenAIServer();
});
afterAll(async () => {
  await elsewhere.close();
});

const OK = replyStep('chat', false, { text: 'done', usage: { input: 10, output: 2 } });
const redirect = (status: number, location: string): ServerStep => ({
  kind: 'raw',
  status,
  contentType: 'text/html',
  body: '<html>Moved</html>',
  headers: { location },
});

async function runWith(steps: ServerStep[], options: Partial<OpenAIModelOptions> = {}): Promise<RunResult> {
  server.enqueue(...steps);
  const loop = createLoop({
    model: openaiModel({
      model: 'gpt-4.1-mini',
      baseURL: server.baseURL,
      apiKey: KEY,
      headers: { 'x-gateway-key': HEADER_SECRET },
      timeoutMs: 5_000,
      ...options,
    }),
    clock: virtualClock(),
    random: () => 0,
  });
  return loop.run({ goal: 'Say done.' });
}

describe('redirects are refused by default', () => {
  it.each([301, 302, 303, 307, 308])(
    '%i to another origin: fatal_error naming the Location; the other server receives nothing',
    async (status) => {
      elsewhere.reset();
      elsewhere.enqueue(OK);
      const location = `${elsewhere.baseURL}/chat/completions`;
      const result = await runWith([redirect(status, location)]);
      expect(result.stopReason).toBe('fatal_error');
      expect(result.error?.code).toBe('model_unknown');
      expect(result.detail).toContain(
        `answered HTTP ${status}, a redirect to ${location}, which was not followed (redirects: 'refuse', the default)`,
      );
      expect(result.detail).toContain('point baseURL at the address it redirects to');
      expect(server.requests).toHaveLength(1);
      expect(elsewhere.requests).toHaveLength(0);
      expect(result.usage.inputTokens).toBe(0);
      elsewhere.reset();
    },
  );

  it('one to the same origin too (it would re-send the request somewhere nobody configured)', async () => {
    const result = await runWith([redirect(308, '/v2/chat/completions')]);
    expect(result.stopReason).toBe('fatal_error');
    expect(result.detail).toContain(
      "a redirect to /v2/chat/completions, which was not followed (redirects: 'refuse', the default)",
    );
    expect(server.requests).toHaveLength(1);
  });
});

describe("redirects: 'same-origin'", () => {
  it.each([301, 302, 307, 308])(
    'follows %i within the origin: the same POST, body and credentials, to the new path',
    async (status) => {
      const result = await runWith([redirect(status, '/v2/chat/completions'), OK], { redirects: 'same-origin' });
      expect(result.stopReason).toBe('completed');
      expect(result.rawOutput).toBe('done');
      expect(server.requests.map((request) => `${request.method} ${request.path}`)).toEqual([
        'POST /v1/chat/completions',
        'POST /v2/chat/completions',
      ]);
      const [first, second] = server.requests;
      expect(second?.body).toEqual(first?.body);
      expect(second?.headers).toMatchObject({ authorization: `Bearer ${KEY}`, 'x-gateway-key': HEADER_SECRET });
      expect(result.usage).toMatchObject({ inputTokens: 10, outputTokens: 2, modelCalls: 1 });
    },
  );

  it('still refuses one that leaves the origin, and a 303 (it asks for a GET of something else)', async () => {
    elsewhere.reset();
    const location = `${elsewhere.baseURL}/chat/completions`;
    const away = await runWith([redirect(307, '/v1/moved'), redirect(307, location)], { redirects: 'same-origin' });
    expect(away.stopReason).toBe('fatal_error');
    expect(away.detail).toContain(
      `a redirect to ${location}, which was not followed (redirects: 'same-origin' follows 301, 302, 307 and 308 within ${new URL(server.baseURL).origin}`,
    );
    expect(elsewhere.requests).toHaveLength(0);
    const seeOther = await runWith([redirect(303, '/v1/result')], { redirects: 'same-origin' });
    expect(seeOther.stopReason).toBe('fatal_error');
    expect(seeOther.detail).toContain('answered HTTP 303');
  });

  it('gives up on a redirect loop after a few hops', async () => {
    const loop = Array.from({ length: 6 }, (_, index) => redirect(307, `/v1/hop-${index}`));
    const result = await runWith(loop, { redirects: 'same-origin' });
    expect(result.stopReason).toBe('fatal_error');
    expect(result.detail).toContain('a redirect to /v1/hop-5, which was not followed');
    expect(server.requests).toHaveLength(6);
  });
});
