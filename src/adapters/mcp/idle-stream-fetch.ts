/**
 * A `fetch` for the MCP HTTP transports whose GET requests (the event streams a server pushes
 * notifications and, over HTTP+SSE, replies on) never keep Node alive: they are made with `node:http`
 * on an unref'd socket. Node's own `fetch` holds the process open for as long as such a stream is, so a
 * program that forgot `close()` would never exit. A call in flight keeps Node alive through its own
 * timers; every other request is the given `fetch`'s.
 */
import { request as httpRequest, type IncomingMessage } from 'node:http';
import { request as httpsRequest } from 'node:https';
import { Readable } from 'node:stream';

type Fetch = (input: string | URL, init?: RequestInit) => Promise<Response>;

function responseOf(message: IncomingMessage): Response {
  const headers = new Headers();
  for (const [name, value] of Object.entries(message.headers)) {
    if (value !== undefined) headers.set(name, Array.isArray(value) ? value.join(', ') : value);
  }
  const status = message.statusCode ?? 502;
  const bodiless = status === 204 || status === 304;
  if (bodiless) message.resume();
  return new Response(bodiless ? null : (Readable.toWeb(message) as ReadableStream<Uint8Array>), {
    status,
    statusText: message.statusMessage ?? '',
    headers,
  });
}

/**
 * `base` for everything but GET, which goes over an unref'd socket.
 * @example
 * new StreamableHTTPClientTransport(url, { fetch: idleStreamFetch() });
 */
export function idleStreamFetch(base: Fetch = (input, init) => fetch(input, init)): Fetch {
  return (input, init) => {
    if ((init?.method ?? 'GET').toUpperCase() !== 'GET') return base(input, init);
    const url = new URL(String(input));
    const headers = Object.fromEntries(new Headers(init?.headers).entries());
    const send = url.protocol === 'https:' ? httpsRequest : httpRequest;
    return new Promise<Response>((resolve, reject) => {
      const request = send(url, { method: 'GET', headers, signal: init?.signal ?? undefined }, (message) =>
        resolve(responseOf(message)),
      );
      request.on('socket', (socket) => socket.unref());
      request.on('error', reject);
      request.end();
    });
  };
}
