import { getEventListeners } from 'node:events';
import { afterEach, describe, expect, it, vi } from 'vitest';
import { z } from 'zod';
import { TRUNCATION_MARKER } from '../prompts.js';
import { defineTool, type OutcomeLookup, type Tool, type ToolAccess, type ToolContext } from './define-tool.js';
import { prepareToolCalls, type PreparedCall } from './prepare-calls.js';
import { runToolRound, type RunToolRoundOptions } from './run-tools.js';
import { ToolCallError } from './tool-call-error.js';
import { ToolHealth } from './tool-health.js';

interface ToolOptions {
  name?: string;
  access?: ToolAccess;
  timeoutMs?: number;
  idempotent?: boolean;
  checkOutcome?: (args: unknown, context: ToolContext) => OutcomeLookup | Promise<OutcomeLookup>;
}

const makeTool = (execute: (args: unknown, context: ToolContext) => unknown, options: ToolOptions = {}): Tool =>
  defineTool({
    name: options.name ?? 'tool',
    description: 'A test tool',
    input: z.object({}).passthrough(),
    access: options.access ?? 'read',
    timeoutMs: options.timeoutMs,
    idempotent: options.idempotent,
    execute,
    checkOutcome: options.checkOutcome,
  });

const readyCall = (tool: Tool, id = 'call_1', args: unknown = {}): PreparedCall => ({
  request: { id, name: tool.name, arguments: JSON.stringify(args) },
  tool,
  status: 'ready',
  args,
  error: null,
});

const roundOptions = (overrides: Partial<RunToolRoundOptions> = {}): RunToolRoundOptions => ({
  runId: 'run_1',
  stepId: '3',
  maxParallel: 4,
  maxResultBytes: 1_000,
  signal: new AbortController().signal,
  health: new ToolHealth(),
  ...overrides,
});

function deferred<Value>() {
  let resolve!: (value: Value) => void;
  const promise = new Promise<Value>((settle) => {
    resolve = settle;
  });
  return { promise, resolve };
}

/** Lets every pending promise callback run. */
const flush = () => new Promise<void>((resolve) => setImmediate(resolve));

const never = () => new Promise<never>(() => {});

afterEach(() => {
  vi.useRealTimers();
});

describe('runToolRound: results', () => {
  it.each([
    ['a string as-is', 'plain text', 'plain text'],
    ['an object as JSON', { status: 'shipped', items: [1, 2] }, '{"status":"shipped","items":[1,2]}'],
    ['undefined as null', undefined, 'null'],
    ['a number as JSON', 42, '42'],
    ['a BigInt as its decimal digits', { id: 12345678901234567890n }, '{"id":"12345678901234567890"}'],
  ])('serialises %s', async (_label, value, expected) => {
    const [outcome] = await runToolRound([readyCall(makeTool(async () => value))], roundOptions());
    expect(outcome).toMatchObject({
      callId: 'call_1',
      name: 'tool',
      status: 'ok',
      content: expected,
      truncated: false,
      bytes: expected.length,
    });
  });

  it('reports a result that cannot be serialised without calling the completed call an error', async () => {
    const circular: Record<string, unknown> = {};
    circular.self = circular;
    const [outcome] = await runToolRound([readyCall(makeTool(() => circular))], roundOptions());
    expect(outcome?.status).toBe('ok');
    expect(outcome?.content).toMatch(
      /^Tool tool completed, but its result could not be serialised as JSON: .*circular/i,
    );
  });

  it('passes the parsed arguments and a context with the idempotency key runId:stepId:callId', async () => {
    const execute = vi.fn((_args: unknown, _context: ToolContext) => 'ok');
    await runToolRound([readyCall(makeTool(execute), 'call_7', { order_id: 'O-1' })], roundOptions());
    expect(execute).toHaveBeenCalledTimes(1);
    const [args, context] = execute.mock.calls[0] ?? [];
    expect(args).toEqual({ order_id: 'O-1' });
    expect(context).toMatchObject({ idempotencyKey: 'run_1:3:call_7', runId: 'run_1', callId: 'call_7' });
    expect(context?.signal.aborted).toBe(false);
  });

  it('measures duration with the injected clock', async () => {
    const times = [100, 175];
    const [outcome] = await runToolRound(
      [readyCall(makeTool(() => 'ok'))],
      roundOptions({ now: () => times.shift() ?? 999 }),
    );
    expect(outcome?.durationMs).toBe(75);
  });

  it.each([
    ['an Error', () => Promise.reject(new Error('connection reset')), 'Tool tool failed: connection reset'],
    [
      'a synchronous throw',
      () => {
        throw new TypeError('bad input');
      },
      'Tool tool failed: bad input',
    ],
    ['a thrown string', () => Promise.reject('quota exceeded'), 'Tool tool failed: quota exceeded'],
    [
      'a thrown object',
      () => Promise.reject({ code: 'E42' }),
      'Tool tool failed: an object was thrown: {"code":"E42"}',
    ],
    ['a thrown undefined', () => Promise.reject(undefined), 'Tool tool failed: undefined was thrown'],
    [
      'an object whose toString throws',
      () =>
        Promise.reject({
          toString: () => {
            throw new Error('no');
          },
        }),
      'Tool tool failed: an object was thrown: {}',
    ],
  ])('captures %s as an error outcome and never throws', async (_label, execute, expected) => {
    const health = new ToolHealth();
    const [outcome] = await runToolRound([readyCall(makeTool(execute))], roundOptions({ health }));
    expect(outcome).toMatchObject({ status: 'error', content: expected });
    expect(health.snapshot().tool).toMatchObject({ failures: 1, successes: 0 });
  });

  it('never runs a call that is not ready, even if one is passed', async () => {
    const execute = vi.fn(() => 'should not run');
    const tool = makeTool(execute, { access: 'destructive' });
    const [denied] = prepareToolCalls([{ id: 'x', name: 'tool', arguments: '{}' }], {
      tools: new Map([['tool', tool]]),
      policy: { allow: [], requireApproval: [] },
      health: new ToolHealth(),
    });
    const [outcome] = await runToolRound([denied as PreparedCall], roundOptions());
    expect(execute).not.toHaveBeenCalled();
    expect(outcome).toMatchObject({ status: 'error', content: expect.stringContaining('not permitted') });
  });
});

describe('runToolRound: parallelism', () => {
  it('runs at most maxParallel calls at once and keeps outcomes in call order', async () => {
    const gates = Array.from({ length: 5 }, () => deferred<string>());
    const started: number[] = [];
    let active = 0;
    let maxActive = 0;
    const calls = gates.map((gate, index) =>
      readyCall(
        makeTool(async () => {
          started.push(index);
          active += 1;
          maxActive = Math.max(maxActive, active);
          const value = await gate.promise;
          active -= 1;
          return value;
        }),
        `call_${index}`,
      ),
    );
    const round = runToolRound(calls, roundOptions({ maxParallel: 2 }));
    await flush();
    expect(started).toEqual([0, 1]);
    gates[1]?.resolve('one');
    await flush();
    expect(started).toEqual([0, 1, 2]);
    gates[2]?.resolve('two');
    gates[0]?.resolve('zero');
    await flush();
    expect(started).toEqual([0, 1, 2, 3, 4]);
    gates[4]?.resolve('four');
    gates[3]?.resolve('three');
    const outcomes = await round;
    expect(maxActive).toBe(2);
    expect(outcomes.map((outcome) => [outcome.callId, outcome.content])).toEqual([
      ['call_0', 'zero'],
      ['call_1', 'one'],
      ['call_2', 'two'],
      ['call_3', 'three'],
      ['call_4', 'four'],
    ]);
  });

  it('still runs every call, one at a time, when maxParallel is below one or NaN', async () => {
    for (const maxParallel of [0, Number.NaN]) {
      let active = 0;
      let maxActive = 0;
      const tool = makeTool(async () => {
        active += 1;
        maxActive = Math.max(maxActive, active);
        await flush();
        active -= 1;
        return 'ok';
      });
      const outcomes = await runToolRound([readyCall(tool, 'a'), readyCall(tool, 'b')], roundOptions({ maxParallel }));
      expect(outcomes.map((outcome) => outcome.status)).toEqual(['ok', 'ok']);
      expect(maxActive).toBe(1);
    }
  });

  it('returns no outcomes for an empty round', async () => {
    expect(await runToolRound([], roundOptions())).toEqual([]);
  });
});

describe('runToolRound: timeouts and unknown outcomes', () => {
  it('aborts the signal on timeout and stops waiting for a tool that ignores it', async () => {
    vi.useFakeTimers();
    let received: AbortSignal | undefined;
    const tool = makeTool(
      (_args, context) => {
        received = context.signal;
        return never();
      },
      { timeoutMs: 20 },
    );
    const health = new ToolHealth();
    const round = runToolRound([readyCall(tool)], roundOptions({ health }));
    await vi.advanceTimersByTimeAsync(19);
    expect(received?.aborted).toBe(false);
    await vi.advanceTimersByTimeAsync(1);
    const [outcome] = await round;
    expect(received?.aborted).toBe(true);
    expect((received?.reason as DOMException).name).toBe('TimeoutError');
    expect(outcome).toMatchObject({ status: 'timeout', content: 'Tool tool timed out after 20 ms.' });
    expect(health.snapshot().tool).toMatchObject({ failures: 1 });
  });

  it('times out a tool that honours the signal as a timeout, not an error', async () => {
    const tool = makeTool(
      (_args, { signal }) =>
        new Promise((_resolve, reject) =>
          signal.addEventListener('abort', () => reject(new Error('aborted by signal'))),
        ),
      { timeoutMs: 20 },
    );
    const [outcome] = await runToolRound([readyCall(tool)], roundOptions());
    expect(outcome?.status).toBe('timeout');
  });

  const sideEffect = (checkOutcome?: ToolOptions['checkOutcome']) => {
    const execute = vi.fn((_args: unknown, _context: ToolContext) => never());
    return { execute, tool: makeTool(execute, { access: 'write', timeoutMs: 20, checkOutcome }) };
  };

  it('looks up a timed-out side effect by the same idempotency key and reports it done', async () => {
    const checkOutcome = vi.fn(async (_args: unknown, _context: ToolContext): Promise<OutcomeLookup> => ({
      status: 'done',
      result: { refund: 'R-1' },
    }));
    const { execute, tool } = sideEffect(checkOutcome);
    const health = new ToolHealth();
    const [outcome] = await runToolRound([readyCall(tool, 'call_9', { amount: 5 })], roundOptions({ health }));
    expect(outcome).toMatchObject({ status: 'ok', content: '{"refund":"R-1"}' });
    expect(execute).toHaveBeenCalledTimes(1);
    expect(checkOutcome).toHaveBeenCalledWith(
      { amount: 5 },
      expect.objectContaining({ idempotencyKey: 'run_1:3:call_9' }),
    );
    expect(execute.mock.calls[0]?.[1]).toMatchObject({ idempotencyKey: 'run_1:3:call_9' });
    expect(health.snapshot().tool).toMatchObject({ successes: 1, failures: 0 });
  });

  it('reports a timed-out side effect that did not take effect as an error', async () => {
    const { execute, tool } = sideEffect(() => ({ status: 'not_done' }));
    const [outcome] = await runToolRound([readyCall(tool)], roundOptions());
    expect(outcome).toMatchObject({
      status: 'error',
      content: 'Tool tool timed out after 20 ms and did not take effect.',
    });
    expect(execute).toHaveBeenCalledTimes(1);
  });

  it.each([
    ['the lookup says unknown', () => ({ status: 'unknown' as const })],
    ['the lookup throws', () => Promise.reject(new Error('ledger down'))],
    ['the lookup hangs', () => never()],
    ['the lookup returns garbage', () => ({ status: 'maybe' }) as unknown as OutcomeLookup],
    ['there is no lookup', undefined],
  ])('reports unknown_outcome and never re-executes when %s', async (_label, checkOutcome) => {
    const { execute, tool } = sideEffect(checkOutcome);
    const health = new ToolHealth();
    const [outcome] = await runToolRound([readyCall(tool)], roundOptions({ health }));
    expect(outcome?.status).toBe('unknown_outcome');
    expect(outcome?.content).toContain('whether it took effect is unknown');
    expect(execute).toHaveBeenCalledTimes(1);
    expect(health.snapshot().tool).toMatchObject({ failures: 1 });
  });

  it('treats a write tool declared idempotent like a read: a plain timeout, no lookup', async () => {
    const checkOutcome = vi.fn((): OutcomeLookup => ({ status: 'done', result: 'x' }));
    const tool = makeTool(never, { access: 'write', idempotent: true, timeoutMs: 20, checkOutcome });
    const [outcome] = await runToolRound([readyCall(tool)], roundOptions());
    expect(outcome?.status).toBe('timeout');
    expect(checkOutcome).not.toHaveBeenCalled();
  });
});

describe('runToolRound: cancellation', () => {
  it('starts no call when the round signal is already aborted, and blames no tool', async () => {
    const execute = vi.fn(() => 'ran');
    const health = new ToolHealth();
    const controller = new AbortController();
    controller.abort();
    const outcomes = await runToolRound(
      [readyCall(makeTool(execute), 'a'), readyCall(makeTool(execute), 'b')],
      roundOptions({ signal: controller.signal, health }),
    );
    expect(execute).not.toHaveBeenCalled();
    expect(outcomes.map((outcome) => outcome.status)).toEqual(['error', 'error']);
    expect(outcomes[0]?.content).toBe('Tool tool was not run: the run was cancelled.');
    expect(health.snapshot()).toEqual({});
  });

  it('abandons calls in flight and skips queued ones when the round is cancelled mid-way', async () => {
    const controller = new AbortController();
    const executed: string[] = [];
    const hanging = (name: string, access: ToolAccess) =>
      makeTool(
        () => {
          executed.push(name);
          return never();
        },
        { name, access },
      );
    const calls = [
      readyCall(hanging('lookup', 'read'), 'a'),
      readyCall(hanging('charge', 'write'), 'b'),
      readyCall(hanging('later', 'read'), 'c'),
    ];
    const health = new ToolHealth();
    const round = runToolRound(calls, roundOptions({ maxParallel: 2, signal: controller.signal, health }));
    await flush();
    controller.abort(new Error('cancelled by user'));
    const outcomes = await round;
    expect(executed).toEqual(['lookup', 'charge']);
    expect(outcomes.map((outcome) => outcome.status)).toEqual(['error', 'unknown_outcome', 'error']);
    expect(outcomes[0]?.content).toBe('Tool lookup was cancelled before it finished.');
    expect(outcomes[1]?.content).toContain('whether it took effect is unknown');
    expect(outcomes[2]?.content).toBe('Tool later was not run: the run was cancelled.');
    expect(health.snapshot()).toEqual({});
  });
});

describe('runToolRound: health', () => {
  it('records successes and failures with their latency', async () => {
    const health = new ToolHealth();
    const times = [0, 40, 0, 10];
    const ok = makeTool(() => 'ok', { name: 'ok_tool' });
    const failing = makeTool(() => Promise.reject(new Error('no')), { name: 'bad_tool' });
    await runToolRound(
      [readyCall(ok, 'a'), readyCall(failing, 'b')],
      roundOptions({ health, maxParallel: 1, now: () => times.shift() ?? 0 }),
    );
    expect(health.snapshot()).toMatchObject({
      ok_tool: { successes: 1, failures: 0, meanLatencyMs: 40 },
      bad_tool: { successes: 0, failures: 1, meanLatencyMs: 10 },
    });
  });

  it('does not record an error a ToolCallError blames on the caller, but records one blamed on the tool', async () => {
    const health = new ToolHealth({ threshold: 1 });
    const notFound = makeTool(
      () => Promise.reject(new ToolCallError({ message: 'no such user u-9', blame: 'caller', toolCode: 'not_found' })),
      { name: 'users' },
    );
    const [outcome] = await runToolRound([readyCall(notFound)], roundOptions({ health }));
    expect(outcome).toMatchObject({ status: 'error', content: 'Tool users failed: no such user u-9' });
    expect(health.snapshot()).toEqual({});
    expect(health.isOpen('users')).toBe(false);

    const broken = makeTool(
      () => {
        throw new ToolCallError({ message: 'database down' });
      },
      { name: 'users' },
    );
    await runToolRound([readyCall(broken)], roundOptions({ health }));
    expect(health.isOpen('users')).toBe(true);
  });

  it('opens the circuit after N failing rounds so the next call is withheld, and a success closes it', async () => {
    const health = new ToolHealth({ threshold: 3 });
    let failing = true;
    const tool = makeTool(() => (failing ? Promise.reject(new Error('503')) : 'recovered'), { name: 'flaky' });
    const tools = new Map([['flaky', tool]]);
    const request = { id: 'c', name: 'flaky', arguments: '{}' };
    for (let round = 0; round < 3; round += 1) {
      const prepared = prepareToolCalls([request], { tools, policy: undefined, health });
      expect(prepared[0]?.status).toBe('ready');
      await runToolRound(prepared, roundOptions({ health }));
    }
    expect(health.isOpen('flaky')).toBe(true);
    expect(prepareToolCalls([request], { tools, policy: undefined, health })[0]?.status).toBe('unavailable');

    failing = false;
    const [outcome] = await runToolRound([readyCall(tool)], roundOptions({ health }));
    expect(outcome?.status).toBe('ok');
    expect(health.isOpen('flaky')).toBe(false);
  });
});

describe('runToolRound: result size cap', () => {
  it('cuts an oversized result with a visible marker, within the byte limit', async () => {
    const result = 'x'.repeat(500);
    const [outcome] = await runToolRound([readyCall(makeTool(() => result))], roundOptions({ maxResultBytes: 120 }));
    const marker = TRUNCATION_MARKER(120 - TRUNCATION_MARKER(500, 500).length, 500);
    expect(outcome).toMatchObject({ status: 'ok', truncated: true, bytes: 500 });
    expect(outcome?.content.endsWith(marker)).toBe(true);
    expect(Buffer.byteLength(outcome?.content ?? '')).toBeLessThanOrEqual(120);
  });

  it('caps error messages too', async () => {
    const [outcome] = await runToolRound(
      [readyCall(makeTool(() => Promise.reject(new Error('e'.repeat(5_000)))))],
      roundOptions({ maxResultBytes: 200 }),
    );
    expect(outcome).toMatchObject({ status: 'error', truncated: true });
    expect(Buffer.byteLength(outcome?.content ?? '')).toBeLessThanOrEqual(200);
  });
});

describe('runToolRound: the signal is made only when a tool reads it', () => {
  it('a tool that never reads its signal gets no AbortController, and still times out', async () => {
    const options = roundOptions();
    const Original = globalThis.AbortController;
    let made = 0;
    globalThis.AbortController = class extends Original {
      constructor() {
        super();
        made += 1;
      }
    };
    try {
      const quiet = makeTool(() => never(), { timeoutMs: 20 });
      const [outcome] = await runToolRound([readyCall(quiet)], options);
      expect(outcome?.status).toBe('timeout');
      expect(made).toBe(0);
      const reader = makeTool((_args, { signal }) => (signal.aborted ? 'aborted' : 'live'));
      const [read] = await runToolRound([readyCall(reader)], options);
      expect(read?.content).toBe('live');
      expect(made).toBe(1);
    } finally {
      globalThis.AbortController = Original;
    }
  });

  it('a tool that first reads its signal after the timeout sees it aborted with the timeout reason', async () => {
    vi.useFakeTimers();
    let late: AbortSignal | undefined;
    let readLater!: () => void;
    const tool = makeTool(
      (_args, context) => {
        readLater = () => {
          late = context.signal;
        };
        return never();
      },
      { timeoutMs: 20 },
    );
    const round = runToolRound([readyCall(tool)], roundOptions());
    await vi.advanceTimersByTimeAsync(20);
    const [outcome] = await round;
    readLater();
    expect(outcome?.status).toBe('timeout');
    expect(late?.aborted).toBe(true);
    expect((late?.reason as DOMException).name).toBe('TimeoutError');
  });

  it("a tool that first reads its signal after the round was cancelled sees it aborted with the run's reason", async () => {
    const run = new AbortController();
    let readLater!: () => AbortSignal;
    const tool = makeTool((_args, context) => {
      readLater = () => context.signal;
      return never();
    });
    const round = runToolRound([readyCall(tool)], roundOptions({ signal: run.signal }));
    await flush();
    run.abort(new Error('user pressed stop'));
    const [outcome] = await round;
    expect(outcome?.status).toBe('error');
    expect(readLater().aborted).toBe(true);
    expect((readLater().reason as Error).message).toBe('user pressed stop');
  });
});

describe('runToolRound: a signal shared by many rounds', () => {
  it('keeps no abort listener on it once a round is over', async () => {
    const controller = new AbortController();
    for (let round = 0; round < 20; round++) {
      await runToolRound([readyCall(makeTool(async () => 'ok'))], roundOptions({ signal: controller.signal }));
    }
    expect(getEventListeners(controller.signal, 'abort')).toHaveLength(0);
  });
});
