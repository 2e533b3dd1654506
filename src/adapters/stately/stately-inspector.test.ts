import { spawn } from 'node:child_process';
import { createServer, type AddressInfo } from 'node:net';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterEach, describe, expect, it } from 'vitest';
import { createInspectorServer } from '@statelyai/inspect/server';
import WebSocket, { WebSocketServer } from 'ws';
import { evaluators } from '../../engine/evaluators/index.js';
import { createLoop } from '../../engine/loop.js';
import { virtualClock } from '../../testing/index.js';
import { sampleLoopConfig } from '../../../test/support/sample-run.js';
import { statelyInspector } from './stately-inspector.js';

const repoRoot = resolve(dirname(fileURLToPath(import.meta.url)), '../../..');
const servers: WebSocketServer[] = [];
afterEach(async () => {
  await Promise.all(servers.splice(0).map((server) => new Promise((done) => server.close(done))));
});

async function listeningServer(): Promise<{ url: string; received: Record<string, unknown>[] }> {
  const server = new WebSocketServer({ host: '127.0.0.1', port: 0 });
  servers.push(server);
  await new Promise((done) => server.once('listening', done));
  const received: Record<string, unknown>[] = [];
  server.on('connection', (socket) =>
    socket.on('message', (data) => received.push(JSON.parse(String(data)) as Record<string, unknown>)),
  );
  return { url: `ws://127.0.0.1:${(server.address() as AddressInfo).port}`, received };
}

/** A port nobody listens on: bound once, then released. */
async function closedPort(): Promise<number> {
  const server = createServer();
  await new Promise<void>((done) => server.listen(0, '127.0.0.1', done));
  const { port } = server.address() as AddressInfo;
  await new Promise((done) => server.close(done));
  return port;
}

describe('statelyInspector', () => {
  it('streams the actor, its events and its snapshots to a listening server', async () => {
    const { url, received } = await listeningServer();
    const inspector = statelyInspector({ url });
    const result = await createLoop(sampleLoopConfig(virtualClock(), { inspect: inspector })).run({
      goal: 'Status of O-101?',
    });
    await inspector.close();
    expect(result.stopReason).toBe('completed');
    await expect.poll(() => received.length).toBe(inspector.sentEvents);
    const types = new Set(received.map((event) => event.type));
    expect([...types].sort()).toEqual(['@xstate.actor', '@xstate.event', '@xstate.snapshot']);
    const actor = received.find((event) => event.type === '@xstate.actor');
    expect(actor).toMatchObject({ name: 'loop' });
    expect(JSON.parse(String(actor?.definition))).toMatchObject({ id: 'loop', initial: 'READY' });
    const eventTypes = received
      .filter((event) => event.type === '@xstate.event')
      .map((event) => (event.event as { type: string }).type);
    expect(eventTypes).toEqual(
      expect.arrayContaining([
        'run.started',
        'model.failed',
        'backoff.elapsed',
        'model.responded',
        'tools.completed',
        'evaluation.completed',
      ]),
    );
    const last = received.filter((event) => event.type === '@xstate.snapshot').at(-1);
    expect(last?.snapshot).toMatchObject({ value: 'TERMINATED', status: 'done' });
    expect(inspector.droppedEvents).toBe(0);
    expect(inspector.status).toBe('closed');
  });

  it("reaches a browser through @statelyai/inspect's own relay server", async () => {
    const port = await closedPort();
    const relay = createInspectorServer({ port, autoOpen: false });
    try {
      await expect
        .poll(async () =>
          fetch(`http://localhost:${port}/`).then(
            (response) => response.status,
            () => 0,
          ),
        )
        .toBe(200);
      // The relay's page connects like this, then hands events to the hosted UI in an iframe.
      const browser = new WebSocket(`ws://localhost:${port}`);
      const relayed: { type: string }[] = [];
      browser.on('message', (data) => relayed.push(JSON.parse(String(data)) as { type: string }));
      await new Promise((done) => browser.once('open', done));
      const inspector = statelyInspector({ url: `ws://localhost:${port}` });
      await createLoop(sampleLoopConfig(virtualClock(), { inspect: inspector })).run({ goal: 'Status of O-101?' });
      await inspector.close();
      await expect.poll(() => relayed.length).toBe(inspector.sentEvents);
      expect(new Set(relayed.map((event) => event.type))).toEqual(
        new Set(['@xstate.actor', '@xstate.event', '@xstate.snapshot']),
      );
      browser.close();
    } finally {
      relay.stop();
    }
  });

  it('redacts the context and events it sends, with the built-in rules and the ones given', async () => {
    const { url, received } = await listeningServer();
    const inspector = statelyInspector({ url, redact: { patterns: [/\bORDER-SECRET-\d+\b/g] } });
    const config = sampleLoopConfig(virtualClock(), {
      inspect: inspector,
      // A rejection whose reason quotes a key: it lands in the machine's context as feedback.
      evaluate: evaluators.rule(() => false, 'saw sk-proj-abcdefghijklmnopqrstuvwx1234567890 and ORDER-SECRET-42'),
      limits: { maxRetries: 1 },
    });
    await createLoop(config).run({ goal: 'Status of O-101?' });
    await inspector.close();
    await expect.poll(() => received.length).toBe(inspector.sentEvents);
    const sent = JSON.stringify(received);
    expect(sent).toContain('[redacted]');
    expect(sent).not.toContain('sk-proj-abcdefghijklmnopqrstuvwx1234567890');
    expect(sent).not.toContain('ORDER-SECRET-42');
  });

  it('buffers what comes before the socket opens and sends it once it does', async () => {
    const { url, received } = await listeningServer();
    const inspector = statelyInspector({ url });
    expect(inspector.status).toBe('connecting');
    await createLoop(sampleLoopConfig(virtualClock(), { inspect: inspector })).run({ goal: 'Status of O-101?' });
    await inspector.close();
    await expect.poll(() => received.length).toBeGreaterThan(10);
    expect(received[0]?.type).toBe('@xstate.actor');
  });

  it('with no server, reports the failure once, drops the events and never retries', async () => {
    const errors: string[] = [];
    const inspector = statelyInspector({
      url: `ws://127.0.0.1:${await closedPort()}`,
      onError: (error) => errors.push(error.message),
    });
    const result = await createLoop(sampleLoopConfig(virtualClock(), { inspect: inspector })).run({
      goal: 'Status of O-101?',
    });
    await inspector.close();
    expect(result.stopReason).toBe('completed');
    expect(result.warnings).toEqual([]);
    expect(errors).toHaveLength(1);
    expect(errors[0]).toMatch(/unreachable: .*ECONNREFUSED/);
    expect(inspector.status).toBe('closed');
    expect(inspector.sentEvents).toBe(0);
    expect(inspector.droppedEvents).toBeGreaterThan(0);
  });

  it('lets a process that ran a loop with it exit by itself when no server listens', async () => {
    const port = await closedPort();
    const child = spawn(
      process.execPath,
      [
        '--import',
        './test/support/typescript-register.mjs',
        join('test', 'fixtures', 'stately-inspector-run.ts'),
        `ws://127.0.0.1:${port}`,
      ],
      {
        cwd: repoRoot,
        stdio: ['ignore', 'pipe', 'pipe'],
      },
    );
    let output = '';
    child.stdout.on('data', (chunk) => (output += String(chunk)));
    child.stderr.on('data', (chunk) => (output += String(chunk)));
    const exit = await new Promise<{ code: number | null; at: number }>((done) => {
      // Generous: on a loaded machine the transpiling loader alone can take seconds. Hanging is what fails.
      const killer = setTimeout(() => child.kill('SIGKILL'), 45_000);
      child.on('exit', (code) => {
        clearTimeout(killer);
        done({ code, at: Date.now() });
      });
    });
    expect({ exit: exit.code, output }).toMatchObject({ exit: 0 });
    expect(output).toContain('run: completed');
    expect(output).toMatch(/inspector: .*unreachable/);
    const finishedAt = Number(/finished at (\d+)/.exec(output)?.[1]);
    // The package's own adapter never exits here (its 5 s reconnect timer); ours lets go at once.
    expect(exit.at - finishedAt).toBeLessThan(3_000);
  }, 60_000);

  it('refuses a url that is not a WebSocket address', () => {
    expect(() => statelyInspector({ url: 'http://localhost:8080' })).toThrow(/ws:\/\/ or wss:\/\//);
  });
});
