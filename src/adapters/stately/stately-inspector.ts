/**
 * `statelyInspector({ url })`: streams the loop actor's inspection events to a Stately inspector over
 * a WebSocket. Built on `@statelyai/inspect`'s `createInspector` with an adapter of ours, because the
 * package's own WebSocket adapter reconnects every 5 s forever and never lets Node exit when nobody
 * listens. Ours connects once, buffers until the socket opens, drops everything once it fails or
 * closes, and keeps no timer or socket referenced, so a finished script always exits. The package and
 * `ws` are loaded when `statelyInspector` is first called: importing loopstate alone never loads them.
 */
import { loadPeerAsync } from '../../engine/peer-dependency.js';
import { connect as netConnect, isIP, type createConnection, type NetConnectOpts, type Socket } from 'node:net';
import { connect as tlsConnect, type ConnectionOptions } from 'node:tls';
import type { StatelyInspectionEvent } from '@statelyai/inspect';
import type WebSocket from 'ws';
import type { InspectionEvent, Observer } from 'xstate';
import { thrownMessage } from '../../engine/redaction/describe-thrown.js';
import { createRedactor, type RedactOptions, type Redactor } from '../../engine/redaction/redact.js';

/**
 * Where and how `statelyInspector` connects.
 * @example
 * const options: StatelyInspectorOptions = { url: 'ws://127.0.0.1:8080', connectTimeoutMs: 1_000 };
 */
export interface StatelyInspectorOptions {
  /** The inspector's WebSocket endpoint, `ws://` or `wss://`. */
  url: string;
  /** Events held while the socket is connecting; past it the oldest are dropped (default 1,000). */
  maxBufferedEvents?: number;
  /** How long the one connection attempt may take before it is given up (default 3,000 ms). */
  connectTimeoutMs?: number;
  /** Told once why the inspector stopped sending (connection refused, timed out, closed by the server). */
  onError?: (error: Error) => void;
  /**
   * Extra redaction rules for the context and events it sends, as the loop's own `redact` option (pass the
   * same); the built-in rules always apply.
   */
  redact?: RedactOptions;
}

/**
 * `connecting` until the one attempt settles, then `open`, and `closed` for good after a failure or `close()`.
 * @example
 * if (inspector.status === 'closed') console.warn(`inspector off; ${inspector.droppedEvents} events not sent`);
 */
export type StatelyInspectorStatus = 'connecting' | 'open' | 'closed';

/**
 * An XState inspection observer that forwards to a Stately inspector; pass it as `createLoop({ inspect })`.
 * @example
 * const inspector = statelyInspector({ url: 'ws://127.0.0.1:8080' });
 * const loop = createLoop({ model, inspect: inspector });
 * await loop.run({ goal: 'Status of O-101?' });
 * await inspector.close();
 */
export interface StatelyInspector extends Observer<InspectionEvent> {
  next(inspectionEvent: InspectionEvent): void;
  readonly status: StatelyInspectorStatus;
  /** Events sent on the socket so far. */
  readonly sentEvents: number;
  /** Events that were never sent: buffered past the cap, pending when the connection failed, or after it closed. */
  readonly droppedEvents: number;
  /** Sends what is buffered (waiting for a pending connection at most `connectTimeoutMs`), then closes the socket. */
  close(): Promise<void>;
}

const DEFAULT_MAX_BUFFERED_EVENTS = 1_000;
const DEFAULT_CONNECT_TIMEOUT_MS = 3_000;
/** A polite close waits this long for the server's close frame, then the socket is cut. */
const CLOSE_GRACE_MS = 500;

/** An unreferenced timer: waiting on it never keeps the process alive. */
const unrefDelay = (ms: number) => new Promise<void>((resolve) => setTimeout(resolve, ms).unref());

/** The adapter `createInspector` writes to: one WebSocket, one attempt, no reconnect. */
class SingleConnectionAdapter {
  status: StatelyInspectorStatus = 'connecting';
  sentEvents = 0;
  droppedEvents = 0;
  private socket: WebSocket | null = null;
  private buffered: string[] = [];
  private readonly settled: Promise<void>;
  private settle: () => void = () => undefined;
  private readonly closed: Promise<void>;
  private markClosed: () => void = () => undefined;

  constructor(
    private readonly options: Required<
      Pick<StatelyInspectorOptions, 'url' | 'maxBufferedEvents' | 'connectTimeoutMs'>
    > &
      Pick<StatelyInspectorOptions, 'onError'>,
    private readonly WebSocketClass: typeof WebSocket,
    private readonly redactor: Redactor,
  ) {
    this.settled = new Promise((resolve) => (this.settle = resolve));
    this.closed = new Promise((resolve) => (this.markClosed = resolve));
  }

  start(): void {
    if (this.socket !== null) return;
    try {
      this.socket = new this.WebSocketClass(this.options.url, {
        handshakeTimeout: this.options.connectTimeoutMs,
        createConnection: unrefConnector(this.options.url.startsWith('wss:')),
      });
    } catch (error) {
      this.fail(
        new Error(`could not connect to the Stately inspector at ${this.options.url}: ${thrownMessage(error)}`, {
          cause: error,
        }),
      );
      return;
    }
    this.socket.on('open', () => {
      this.status = 'open';
      this.settle();
      const pending = this.buffered;
      this.buffered = [];
      for (const text of pending) this.write(text);
    });
    this.socket.on('error', (error) =>
      this.fail(
        new Error(`the Stately inspector at ${this.options.url} is unreachable: ${error.message}`, { cause: error }),
      ),
    );
    this.socket.on('close', () => {
      if (this.status !== 'closed')
        this.fail(new Error(`the Stately inspector at ${this.options.url} closed the connection`));
      this.markClosed();
    });
  }

  send(event: StatelyInspectionEvent): void {
    if (this.status === 'closed') {
      this.droppedEvents++;
      return;
    }
    let text: string;
    try {
      // Evaluator reasons and stop details can quote model output: the rules of traces apply to every
      // string of the event, its snapshot's context and output included (read as JSON, as it is sent).
      text = JSON.stringify(this.redactor.strings(JSON.parse(JSON.stringify(event)) as unknown));
    } catch {
      // A snapshot that cannot be serialised (a cycle): that one event is skipped, the stream goes on.
      this.droppedEvents++;
      return;
    }
    if (this.status === 'open') {
      this.write(text);
      return;
    }
    this.buffered.push(text);
    if (this.buffered.length > this.options.maxBufferedEvents) {
      this.buffered.shift();
      this.droppedEvents++;
    }
  }

  stop(): void {
    this.droppedEvents += this.buffered.length;
    this.buffered = [];
    this.status = 'closed';
    this.settle();
    const socket = this.socket;
    if (socket === null || socket.readyState === this.WebSocketClass.CLOSED) {
      this.markClosed();
      return;
    }
    if (socket.readyState === this.WebSocketClass.OPEN) {
      socket.close();
      void unrefDelay(CLOSE_GRACE_MS).then(() => socket.terminate());
    } else {
      socket.terminate();
    }
  }

  async close(): Promise<void> {
    // The inspector converts XState's events on a zero-delay timer; let the last ones through first.
    await new Promise<void>((resolve) => setTimeout(resolve, 0));
    if (this.status === 'connecting') await Promise.race([this.settled, unrefDelay(this.options.connectTimeoutMs)]);
    this.stop();
    await Promise.race([this.closed, unrefDelay(CLOSE_GRACE_MS * 2)]);
  }

  private write(text: string): void {
    try {
      this.socket?.send(text);
      this.sentEvents++;
    } catch {
      this.droppedEvents++;
    }
  }

  private fail(error: Error): void {
    if (this.status === 'closed') return;
    this.status = 'closed';
    this.droppedEvents += this.buffered.length;
    this.buffered = [];
    this.settle();
    try {
      this.options.onError?.(error);
    } catch {
      // The caller's error hook throwing changes nothing: the inspector is already off.
    }
  }
}

/** `ws`'s own connectors (`netConnect`, `tlsConnect`), with the socket unreferenced: an open inspector socket never holds the process. */
function unrefConnector(secure: boolean): typeof createConnection {
  const connect = (options: NetConnectOpts & ConnectionOptions & { socketPath?: string; host?: string }): Socket => {
    const socket = secure
      ? tlsConnect({
          ...options,
          path: undefined,
          servername: options.servername ?? (isIP(options.host ?? '') ? '' : options.host),
        })
      : netConnect({ ...options, path: options.socketPath } as NetConnectOpts);
    socket.unref();
    return socket;
  };
  return connect as typeof createConnection;
}

/**
 * Streams a loop's statechart events and snapshots to a Stately inspector listening on `url` (a
 * WebSocket server, such as the one the Stately inspector's own tooling starts). Off unless you pass
 * it as `createLoop({ inspect })`. It connects once: events are buffered until the socket opens, and
 * dropped for good if it fails or closes (no reconnect). Nothing it holds keeps Node alive; call
 * `close()` before exiting to flush the last events. The inspector sees the machine's context
 * (counters, digests, evaluator reasons, stop details), never messages or tool results; strings in it
 * are redacted with the built-in rules plus `redact`.
 * @example
 * const inspector = statelyInspector({ url: 'ws://127.0.0.1:8080' });
 * const loop = createLoop({ model, inspect: inspector });
 * await loop.run({ goal: 'Status of O-101?' });
 * await inspector.close();
 */
export function statelyInspector(options: StatelyInspectorOptions): StatelyInspector {
  if (typeof options?.url !== 'string' || !/^wss?:\/\//.test(options.url)) {
    throw new TypeError(
      `statelyInspector: expected url to be a ws:// or wss:// address, got ${JSON.stringify(options?.url)}`,
    );
  }
  const redactor = createRedactor(options.redact);
  const resolved = {
    url: options.url,
    maxBufferedEvents: options.maxBufferedEvents ?? DEFAULT_MAX_BUFFERED_EVENTS,
    connectTimeoutMs: options.connectTimeoutMs ?? DEFAULT_CONNECT_TIMEOUT_MS,
    onError: options.onError,
  };
  let adapter: SingleConnectionAdapter | null = null;
  let forward: Observer<InspectionEvent> | null = null;
  // Events that arrive while the inspector's modules load; capped like the socket's buffer.
  let early: InspectionEvent[] = [];
  let earlyDropped = 0;
  let closing = false;
  // Loaded on first use, so a loop that never inspects never loads them.
  const install = 'npm install @statelyai/inspect ws';
  const loaded = Promise.all([
    loadPeerAsync(() => import('@statelyai/inspect'), {
      packageName: '@statelyai/inspect',
      installCommand: install,
      feature: 'statelyInspector',
    }),
    loadPeerAsync(() => import('ws'), { packageName: 'ws', installCommand: install, feature: 'statelyInspector' }),
  ]).then(
    ([{ createInspector }, { default: WebSocketClass }]) => {
      adapter = new SingleConnectionAdapter(resolved, WebSocketClass, redactor);
      const inspector = createInspector(adapter);
      // The one connection attempt starts now; what came before is replayed into its buffer.
      inspector.start();
      forward = inspector.inspect;
      adapter.droppedEvents += earlyDropped;
      for (const event of early) forward.next?.(event);
      early = [];
    },
    (error: unknown) => {
      earlyDropped += early.length;
      early = [];
      try {
        resolved.onError?.(
          new Error(`the Stately inspector could not be loaded: ${thrownMessage(error)}`, { cause: error }),
        );
      } catch {
        // As for a failed connection: the caller's hook throwing changes nothing.
      }
    },
  );
  return {
    next: (inspectionEvent) => {
      if (adapter === null) {
        if (closing) earlyDropped++;
        else if (early.push(inspectionEvent) > resolved.maxBufferedEvents) {
          early.shift();
          earlyDropped++;
        }
      } else if (adapter.status !== 'closed') forward?.next?.(inspectionEvent);
      else adapter.droppedEvents++;
    },
    get status() {
      return adapter?.status ?? (closing ? 'closed' : 'connecting');
    },
    get sentEvents() {
      return adapter?.sentEvents ?? 0;
    },
    get droppedEvents() {
      return adapter?.droppedEvents ?? earlyDropped;
    },
    close: async () => {
      closing = true;
      await loaded;
      await (adapter as SingleConnectionAdapter | null)?.close();
    },
  };
}
