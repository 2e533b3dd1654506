import { mkdtempSync, rmSync } from 'node:fs';
import { request } from 'node:http';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { writeSampleTrace } from '../../../test/support/sample-run.js';
import { startViewer, type RunningViewer } from './viewer-server.js';

let directory: string;
let viewer: RunningViewer;
let port: number;

beforeAll(async () => {
  directory = mkdtempSync(join(tmpdir(), 'loopstate-viewer-server-'));
  const tracePath = join(directory, 'run.jsonl');
  await writeSampleTrace(tracePath);
  viewer = await startViewer({ tracePath });
  port = Number(new URL(viewer.url).port);
}, 30_000);

afterAll(async () => {
  await viewer?.close();
  rmSync(directory, { recursive: true, force: true });
});

/** A real HTTP request over a real socket to 127.0.0.1, carrying exactly the Host header given: what a rebinding page's browser sends. */
function getWithHost(path: string, host: string): Promise<{ status: number; body: string }> {
  return new Promise((resolve, reject) => {
    const sent = request({ host: '127.0.0.1', port, path, headers: { host } }, (response) => {
      let body = '';
      response.setEncoding('utf8');
      response.on('data', (chunk: string) => (body += chunk));
      response.on('end', () => resolve({ status: response.statusCode ?? 0, body }));
    });
    sent.on('error', reject);
    sent.end();
  });
}

describe('the viewer server refuses requests that name another host (DNS rebinding)', () => {
  it('answers 421 to a request for the trace that names another host, with the port of this server', async () => {
    for (const path of ['/', '/timeline.json']) {
      const refused = await getWithHost(path, `evil.example:${port}`);
      expect(refused.status).toBe(421);
      expect(refused.body).not.toContain('run-sample');
      expect(refused.body).toContain(`answers only to http://127.0.0.1:${port}/`);
    }
  });

  it('refuses the right name on another port, and no port at all', async () => {
    expect((await getWithHost('/timeline.json', `127.0.0.1:${port + 1}`)).status).toBe(421);
    expect((await getWithHost('/timeline.json', 'localhost')).status).toBe(421);
  });

  it.each(['127.0.0.1', 'localhost', 'LOCALHOST', '[::1]'])(
    'serves the trace when the Host is %s:<port>',
    async (name) => {
      const page = await getWithHost('/timeline.json', `${name}:${port}`);
      expect(page.status).toBe(200);
      expect(JSON.parse(page.body)).toMatchObject({ runId: 'run-sample' });
    },
  );
});
