/**
 * Redirects of the model's server, never followed blindly. fetch would follow a 307 or 308 to any origin
 * with the conversation and the credential headers, and turn a 301 or 302 into a GET whose answer, from
 * another server, would be taken for the reply. So every request goes out with `redirect: 'manual'`: a
 * redirect comes back as the response itself (the client reports it as a status error naming the
 * Location), and only with `redirects: 'same-origin'` is one that stays on the origin followed, as the
 * same request again.
 */
import type { FetchFunction } from './call-watchdog.js';

/**
 * What `openaiModel` does with a redirect: `refuse` (the default) fails the call naming the Location;
 * `same-origin` follows a 301, 302, 307 or 308 to the same scheme, host and port, re-sending the same request.
 * @example
 * const policy: RedirectPolicy = 'same-origin'; // a gateway that moves /v1/chat/completions within itself
 */
export type RedirectPolicy = 'refuse' | 'same-origin';

/** The redirects that may be re-sent as the same request; a 303 asks for a GET of something else. */
const FOLLOWABLE = new Set([301, 302, 307, 308]);

/** Hops followed before the last redirect is reported as it is: a loop must end. */
export const MAX_REDIRECT_HOPS = 5;

const urlOf = (input: string | URL | Request): string =>
  typeof input === 'string' ? input : input instanceof URL ? input.href : input.url;

function resolved(location: string | null, base: string): URL | null {
  if (location === null) return null;
  try {
    return new URL(location, base);
  } catch {
    return null;
  }
}

/**
 * A fetch that never follows a redirect by itself; under `same-origin` it follows those within the origin.
 * @example
 * const fetch = guardRedirects(globalThis.fetch, 'refuse');
 */
export function guardRedirects(fetch: FetchFunction, policy: RedirectPolicy): FetchFunction {
  return async (input, init) => {
    let url = urlOf(input);
    let response = await fetch(input, { ...init, redirect: 'manual' });
    for (let hop = 0; policy === 'same-origin' && hop < MAX_REDIRECT_HOPS && FOLLOWABLE.has(response.status); hop++) {
      const next = resolved(response.headers.get('location'), url);
      if (next === null || next.origin !== new URL(url).origin) break;
      // The redirect's own body is not the reply; the socket is freed before the next request.
      await response.body?.cancel().catch(() => undefined);
      url = next.href;
      // The openai client calls fetch with a URL and its JSON body as text, so the request can be sent again as it is.
      response = await fetch(url, { ...init, redirect: 'manual' });
    }
    return response;
  };
}
