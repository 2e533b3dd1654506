import { describe, expect, it } from 'vitest';
import type { FetchFunction } from './call-watchdog.js';
import { guardRedirects, MAX_REDIRECT_HOPS } from './redirect-guard.js';

/** A fetch that answers each request with the next scripted status and Location, and records what it was asked. */
function scriptedFetch(answers: { status: number; location?: string }[]): {
  fetch: FetchFunction;
  asked: { url: string; init: RequestInit | undefined }[];
} {
  const asked: { url: string; init: RequestInit | undefined }[] = [];
  const fetch: FetchFunction = async (input, init) => {
    asked.push({ url: String(input), init });
    const answer = answers.shift() ?? { status: 200 };
    return new Response(answer.status === 200 ? '{}' : 'moved', {
      status: answer.status,
      headers: answer.location === undefined ? {} : { location: answer.location },
    });
  };
  return { fetch, asked };
}

const init: RequestInit = { method: 'POST', body: '{"model":"m"}', headers: { authorization: 'Bearer k' } };

describe('guardRedirects', () => {
  it("'refuse': asks fetch never to follow, and hands the redirect back as it came", async () => {
    const server = scriptedFetch([{ status: 307, location: '/v1/other' }]);
    const response = await guardRedirects(server.fetch, 'refuse')('http://api.test/v1/chat/completions', init);
    expect(response.status).toBe(307);
    expect(server.asked).toEqual([
      { url: 'http://api.test/v1/chat/completions', init: { ...init, redirect: 'manual' } },
    ]);
  });

  it("'same-origin': re-sends the same request within the origin, never to another one", async () => {
    const server = scriptedFetch([
      { status: 301, location: '/v2/chat' },
      { status: 308, location: 'https://api.test/v2/chat' },
    ]);
    const response = await guardRedirects(server.fetch, 'same-origin')('http://api.test/v1/chat/completions', init);
    expect(response.status).toBe(308);
    expect(server.asked.map((request) => request.url)).toEqual([
      'http://api.test/v1/chat/completions',
      'http://api.test/v2/chat',
    ]);
    expect(server.asked[1]?.init).toEqual({ ...init, redirect: 'manual' });
  });

  it("'same-origin': a 303, a missing Location and a loop end with the redirect itself", async () => {
    expect(
      (
        await guardRedirects(scriptedFetch([{ status: 303, location: '/v1/x' }]).fetch, 'same-origin')(
          'http://api.test/v1',
          init,
        )
      ).status,
    ).toBe(303);
    expect(
      (await guardRedirects(scriptedFetch([{ status: 302 }]).fetch, 'same-origin')('http://api.test/v1', init)).status,
    ).toBe(302);
    const loop = scriptedFetch(Array.from({ length: 10 }, () => ({ status: 307, location: '/v1/again' })));
    expect((await guardRedirects(loop.fetch, 'same-origin')('http://api.test/v1', init)).status).toBe(307);
    expect(loop.asked).toHaveLength(MAX_REDIRECT_HOPS + 1);
  });
});
