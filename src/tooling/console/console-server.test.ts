import { existsSync, mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { request } from 'node:http';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createLoop } from 'loopstate';
import { sqliteStore } from 'loopstate/sqlite';
import config from '../../../test/fixtures/console/refund-loop.js';
import { startConsole, type RunningConsole } from './console-server.js';
import { openStoredLoop, type StoredLoop } from './stored-loop.js';

const LOOP_FILE = resolve('test/fixtures/console/refund-loop.ts');
const lines = (path: string) => (existsSync(path) ? readFileSync(path, 'utf8').split('\n').filter(Boolean) : []);
/** The orders the refund tool refunded, as it wrote them itself. */
const refunds = () => lines(process.env.REFUNDS_LOG!);
/** Every message the model was sent, over all its calls. */
const modelSaw = () =>
  lines(process.env.MODEL_CALLS_LOG!).flatMap((line) =>
    (JSON.parse(line) as { content: unknown }[]).map((message) => String(message.content)),
  );
let directory: string;
let stored: StoredLoop;
let console_: RunningConsole;
let port: number;
let token: string;

/** Runs that stop for approval of a refund, one per order, in the store at `path`. */
async function waitingRuns(path: string, orders: string[]): Promise<void> {
  const store = sqliteStore({ path });
  const loop = createLoop({ ...config, store });
  for (const order of orders) {
    const result = await loop.run({ goal: `Refund order ${order}`, runId: `run-${order}` });
    expect(result.stopReason).toBe('needs_human');
  }
  // Outputs waiting for a person's review.
  for (const order of ['O-5', 'O-6']) {
    const result = await loop.run({ goal: `Write a note for ${order}`, runId: `note-${order}` });
    expect(result.pendingReview).toMatchObject({ rawOutput: `Note: ${order} is on its way` });
  }
  await store.close();
}

/** A real HTTP request over a socket to the console, with exactly these headers. */
function send(
  path: string,
  options: { method?: string; headers?: Record<string, string>; body?: string } = {},
): Promise<{ status: number; body: string }> {
  return new Promise((resolvePromise, reject) => {
    const sent = request(
      {
        host: '127.0.0.1',
        port,
        path,
        method: options.method ?? 'GET',
        headers: { host: `127.0.0.1:${port}`, ...options.headers },
      },
      (response) => {
        let body = '';
        response.setEncoding('utf8');
        response.on('data', (chunk: string) => (body += chunk));
        response.on('end', () => resolvePromise({ status: response.statusCode ?? 0, body }));
      },
    );
    sent.on('error', reject);
    sent.end(options.body);
  });
}
const decide = (runId: string, body: unknown, headers: Record<string, string> = {}) =>
  send(`/api/runs/${encodeURIComponent(runId)}/actions`, {
    method: 'POST',
    headers: { 'content-type': 'application/json', 'x-loopstate-token': token, ...headers },
    body: JSON.stringify(body),
  });

beforeAll(async () => {
  directory = mkdtempSync(join(tmpdir(), 'loopstate-console-server-'));
  process.env.REFUNDS_LOG = join(directory, 'refunds.log');
  process.env.MODEL_CALLS_LOG = join(directory, 'model-calls.jsonl');
  const db = join(directory, 'loops.db');
  await waitingRuns(db, ['O-1', 'O-2', 'O-3']);
  stored = await openStoredLoop({ loopFile: LOOP_FILE, store: db });
  console_ = await startConsole({ stored });
  const url = new URL(console_.url);
  port = Number(url.port);
  token = url.searchParams.get('token')!;
}, 60_000);

afterAll(async () => {
  await console_?.close();
  await stored?.close();
  rmSync(directory, { recursive: true, force: true });
});

describe('the console server', () => {
  it('refuses a request without the token, or with another token (403), on every path', async () => {
    for (const path of ['/', '/api/runs', '/runs/run-O-1']) {
      const refused = await send(path);
      expect(refused.status).toBe(403);
      expect(refused.body).not.toContain('run-O-1');
      // Another token: the last character changed (to one it is not, or the check would see the real token).
      const other = `${token.slice(0, -1)}${token.endsWith('x') ? 'y' : 'x'}`;
      expect((await send(`${path}?token=${other}`)).status).toBe(403);
    }
    const post = await decide('run-O-1', { kind: 'approve', callId: 'call-O-1' }, { 'x-loopstate-token': 'nope' });
    expect(post.status).toBe(403);
    expect(refunds()).not.toContain('O-1');
  });

  it('refuses a request that names another host (421), token or not', async () => {
    const refused = await send(`/api/runs?token=${token}`, { headers: { host: `evil.example:${port}` } });
    expect(refused.status).toBe(421);
    expect(refused.body).not.toContain('run-O-1');
  });

  it('lists the runs with their pending calls, arguments redacted', async () => {
    const page = await send(`/api/runs?token=${token}`);
    expect(page.status).toBe(200);
    const { runs } = JSON.parse(page.body) as {
      runs: { runId: string; status: string; pendingApprovals: { args: unknown }[] }[];
    };
    expect(runs.map((run) => [run.runId, run.status])).toEqual([
      ['note-O-5', 'needs_human'],
      ['note-O-6', 'needs_human'],
      ['run-O-1', 'needs_human'],
      ['run-O-2', 'needs_human'],
      ['run-O-3', 'needs_human'],
    ]);
    expect(runs[2]!.pendingApprovals[0]!.args).toEqual({ order_id: 'O-1', api_key: '[redacted]' });
    expect(page.body).not.toContain('sk-live');
    expect((await send(`/api/runs?token=${token}&status=waiting`)).status).toBe(400);
  });

  it('takes a decision only as a JSON POST with the token header', async () => {
    expect((await send(`/api/runs/run-O-1/actions?token=${token}`)).status).toBe(405);
    const inUrl = await send(`/api/runs/run-O-1/actions?token=${token}`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: '{"kind":"approve","callId":"call-O-1"}',
    });
    expect(inUrl.status).toBe(403);
    const form = await decide('run-O-1', 'kind=approve', { 'content-type': 'application/x-www-form-urlencoded' });
    expect(form.status).toBe(415);
    const noReason = await decide('run-O-1', { kind: 'reject', callId: 'call-O-1' });
    expect(noReason.status).toBe(400);
    expect(JSON.parse(noReason.body).error.message).toContain('reason');
    const unknown = await decide('run-nope', { kind: 'approve', callId: 'call-O-1' });
    expect(unknown.status).toBe(404);
    expect(refunds()).not.toContain('O-1');
  });

  it('approves through loop.resume: the refund runs once and the run completes; deciding again is "already decided"', async () => {
    const started = await decide('run-O-1', { kind: 'approve', callId: 'call-O-1' });
    expect(started.status).toBe(202);
    await console_.settled();
    expect(refunds().filter((order) => order === 'O-1')).toEqual(['O-1']);
    const again = await decide('run-O-1', { kind: 'approve', callId: 'call-O-1' });
    expect(again.status).toBe(409);
    expect(JSON.parse(again.body).error.code).toBe('approval_already_decided');
    const other = await decide('run-O-1', { kind: 'reject', callId: 'call-O-1', reason: 'no' });
    expect(JSON.parse(other.body).error.code).toBe('approval_already_decided');
    const { runs } = JSON.parse((await send(`/api/runs?token=${token}`)).body) as {
      runs: { runId: string; status: string; activity: unknown }[];
    };
    expect(runs.find((run) => run.runId === 'run-O-1')).toMatchObject({
      status: 'succeeded',
      activity: { state: 'done', action: 'approve', stopReason: 'completed' },
    });
    expect(refunds().filter((order) => order === 'O-1')).toEqual(['O-1']);
  });

  it('two decisions on one call at once: one continues the run, the other is "already decided"', async () => {
    // Checks that wait for each other (as on a store a network away), so two requests can be inside them at
    // once: each waits until both arrived, or until a while passed without the other (it was refused earlier).
    let arrived = 0;
    let bothIn: () => void = () => undefined;
    const together = new Promise<void>((resolveBoth) => (bothIn = resolveBoth));
    const slow: StoredLoop = {
      ...stored,
      checkDecisions: async (runId, approvals) => {
        if (++arrived === 2) bothIn();
        await Promise.race([together, new Promise((resolveLater) => setTimeout(resolveLater, 300))]);
        return stored.checkDecisions(runId, approvals);
      },
    };
    const second = await startConsole({ stored: slow });
    const secondUrl = new URL(second.url);
    const [first, other] = await Promise.all(
      [0, 1].map(
        () =>
          new Promise<{ status: number; body: string }>((done, fail) => {
            const sent = request(
              {
                host: '127.0.0.1',
                port: Number(secondUrl.port),
                path: '/api/runs/run-O-2/actions',
                method: 'POST',
                headers: {
                  host: `127.0.0.1:${secondUrl.port}`,
                  'content-type': 'application/json',
                  'x-loopstate-token': secondUrl.searchParams.get('token')!,
                },
              },
              (response) => {
                let body = '';
                response.setEncoding('utf8');
                response.on('data', (chunk: string) => (body += chunk));
                response.on('end', () => done({ status: response.statusCode ?? 0, body }));
              },
            );
            sent.on('error', fail);
            sent.end(JSON.stringify({ kind: 'approve', callId: 'call-O-2' }));
          }),
      ),
    );
    expect([first!.status, other!.status].sort()).toEqual([202, 409]);
    expect(JSON.parse((first!.status === 409 ? first! : other!).body).error.code).toBe('approval_already_decided');
    expect(arrived).toBe(1);
    await second.close();
    expect(refunds().filter((order) => order === 'O-2')).toEqual(['O-2']);
  });

  it('a rejection reaches the model, and the refund never runs', async () => {
    expect(
      (await decide('run-O-3', { kind: 'reject', callId: 'call-O-3', reason: 'order O-3 was refunded by hand' }))
        .status,
    ).toBe(202);
    await console_.settled();
    expect(modelSaw().some((text) => text.includes('order O-3 was refunded by hand'))).toBe(true);
    expect(refunds()).not.toContain('O-3');
  });

  it('accepts an output waiting for review through loop.resume; deciding again is "already decided"', async () => {
    type Listed = {
      runs: { runId: string; status: string; pendingReview: { outputHash: string; reason: string } | null }[];
    };
    const listed = JSON.parse((await send(`/api/runs?token=${token}`)).body) as Listed;
    const waiting = listed.runs.find((run) => run.runId === 'note-O-5')!;
    expect(waiting.pendingReview).toMatchObject({ reason: 'a person signs notes off' });
    const { outputHash } = waiting.pendingReview!;
    // Another output than the one waiting: refused before anything changes, with the loop's own error.
    const other = await decide('note-O-5', { kind: 'accept', outputHash: 'ffffffffffffffff' });
    expect(other.status).toBe(409);
    expect(JSON.parse(other.body).error.code).toBe('review_output_changed');
    expect((await decide('note-O-5', { kind: 'accept', outputHash })).status).toBe(202);
    await console_.settled();
    const after = JSON.parse((await send(`/api/runs?token=${token}`)).body) as Listed;
    expect(after.runs.find((run) => run.runId === 'note-O-5')).toMatchObject({
      status: 'succeeded',
      pendingReview: null,
    });
    const again = await decide('note-O-5', { kind: 'accept', outputHash });
    expect(again.status).toBe(409);
    expect(JSON.parse(again.body).error.code).toBe('review_already_decided');
  });

  it('a rejected output: the reason reaches the model, and the run waits for review again', async () => {
    expect((await decide('note-O-6', { kind: 'reject-output' })).status).toBe(400);
    expect((await decide('note-O-6', { kind: 'reject-output', reason: 'say when it arrives' })).status).toBe(202);
    await console_.settled();
    expect(modelSaw().some((text) => text.includes('say when it arrives'))).toBe(true);
    const listed = JSON.parse((await send(`/api/runs?token=${token}`)).body) as {
      runs: { runId: string; status: string; pendingReview: unknown }[];
    };
    expect(listed.runs.find((run) => run.runId === 'note-O-6')).toMatchObject({
      status: 'needs_human',
      pendingReview: { taskId: expect.any(String) },
    });
  });

  it('the model repeated its output: a stale tab\'s decision on the first stop is "already decided", never applied to the second', async () => {
    type Listed = { runs: { runId: string; pendingReview: { outputHash: string; reviewId: string } | null }[] };
    const review = async () =>
      (JSON.parse((await send(`/api/runs?token=${token}`)).body) as Listed).runs.find(
        (run) => run.runId === 'note-O-7',
      )!.pendingReview!;
    const store = sqliteStore({ path: join(directory, 'loops.db') });
    await createLoop({ ...config, store }).run({ goal: 'Write a note for O-7', runId: 'note-O-7' });
    await store.close();
    const { outputHash, reviewId } = await review();
    const first = { outputHash, reviewId };
    expect(first.reviewId).toMatch(/^\d+-[0-9a-f]{16}$/);
    const rejection = { kind: 'reject-output', reason: 'name the carrier', ...first };
    expect((await decide('note-O-7', rejection)).status).toBe(202);
    await console_.settled();
    const waiting = await review();
    const second = { outputHash: waiting.outputHash, reviewId: waiting.reviewId };
    // The same text waits again, at another stop.
    expect(second.outputHash).toBe(first.outputHash);
    expect(second.reviewId).not.toBe(first.reviewId);
    const calls = lines(process.env.MODEL_CALLS_LOG!).length;
    // A second tab that showed the first stop sends the same rejection, bound to it, or (an older page) only to its text.
    for (const stale of [
      rejection,
      { kind: 'reject-output', reason: 'name the carrier', outputHash: first.outputHash },
    ]) {
      const again = await decide('note-O-7', stale);
      expect(again.status).toBe(409);
      expect(JSON.parse(again.body).error.code).toBe('review_already_decided');
    }
    const accepted = await decide('note-O-7', { kind: 'accept', ...first });
    expect(accepted.status).toBe(409);
    expect(JSON.parse(accepted.body).error.code).toBe('review_already_decided');
    await console_.settled();
    expect(lines(process.env.MODEL_CALLS_LOG!)).toHaveLength(calls);
    expect(await review()).toEqual(waiting);
    // Bound to the stop that waits now, the decision is taken.
    expect((await decide('note-O-7', { kind: 'accept', ...second })).status).toBe(202);
    await console_.settled();
    expect(await review()).toBeNull();
  });

  it('serves a stored run in the viewer, with no trace file; an unknown run is 404', async () => {
    const page = await send(`/runs/run-O-1?token=${token}`);
    expect(page.status).toBe(200);
    expect(page.body).toContain('Run <code>run-O-1</code>');
    expect(page.body).toContain('completed');
    expect((await send(`/runs/run-nope?token=${token}`)).status).toBe(404);
  });
});

describe("the console's run page reads the trace apart from the transcript", () => {
  it('a damaged transcript chunk: the page shows the trace, and says which chunk of the transcript is damaged', async () => {
    const own = mkdtempSync(join(tmpdir(), 'loopstate-console-damaged-'));
    const db = join(own, 'loops.db');
    const store = sqliteStore({ path: db });
    // A snapshot (and its transcript chunk) at every step: the stop's record refers to the chain of chunks.
    const loop = createLoop({ ...config, store, durable: { snapshotEvery: 1 } });
    const done = await loop.run({ goal: 'Write a note for O-9', runId: 'note-O-9' });
    expect(done.pendingReview).not.toBeNull();
    await store.close();
    const { default: Database } = await import('better-sqlite3');
    const raw = new Database(db);
    const chunks = raw
      .prepare("SELECT id & 4294967295 AS seq FROM journal WHERE run_id = ? AND kind = 'transcript' ORDER BY id")
      .all('note-O-9') as { seq: number }[];
    expect(chunks.length).toBeGreaterThan(0);
    const damaged = chunks.at(-1)!.seq;
    raw
      .prepare("UPDATE journal SET body = '{\"not a chunk', packed = NULL WHERE run_id = ? AND (id & 4294967295) = ?")
      .run('note-O-9', damaged);
    raw.close();
    const storedHere = await openStoredLoop({ loopFile: LOOP_FILE, store: db });
    const here = await startConsole({ stored: storedHere });
    try {
      const url = new URL(here.url);
      const page = await new Promise<{ status: number; body: string }>((resolvePage, reject) => {
        const sent = request(
          { host: '127.0.0.1', port: Number(url.port), path: `/runs/note-O-9?token=${url.searchParams.get('token')}` },
          (response) => {
            let body = '';
            response.setEncoding('utf8');
            response.on('data', (chunk: string) => (body += chunk));
            response.on('end', () => resolvePage({ status: response.statusCode ?? 0, body }));
          },
        );
        sent.on('error', reject);
        sent.end();
      });
      expect(page.status).toBe(200);
      expect(page.body).toContain('Run <code>note-O-9</code>');
      // The trace's steps are on the page, and the transcript's damage is said with the chunk's seq.
      expect(page.body).toContain('run-end');
      expect(page.body).toContain('the transcript of this run cannot be read (its trace can)');
      expect(page.body).toContain(`seq ${damaged}`);
    } finally {
      await here.close();
      await storedHere.close();
      rmSync(own, { recursive: true, force: true });
    }
  });
});
