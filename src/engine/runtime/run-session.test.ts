/**
 * The session's state changes only through its methods: each test drives one of them on a real session
 * (a resolved config, a scripted model) and reads the result back through the getters.
 */
import { describe, expect, it } from 'vitest';
import type { TraceEvent } from '../trace/trace-event.js';
import { resolveConfig } from '../config/config.js';
import { scriptedModel } from '../../testing/index.js';
import { ProgressTracker } from '../progress/index.js';
import { RunSession, type PendingCall, type RestoredSessionFields } from './run-session.js';

function session(onEvent?: (event: TraceEvent) => void): RunSession {
  const config = resolveConfig({
    model: scriptedModel([]),
    tasks: [
      { id: 'classify', prompt: 'Classify.' },
      { id: 'draft', prompt: 'Draft.' },
    ],
    ...(onEvent ? { trace: { onEvent } } : {}),
  });
  return new RunSession(config, 'run_1', 'Weekly report', new AbortController().signal);
}

const pendingCall = (id: string): PendingCall => ({
  call: { request: { id, name: 'lookup', arguments: '{}' }, tool: undefined, status: 'ready', args: {}, error: null },
  fingerprint: `lookup:${id}`,
  refusal: null,
});

const warning = (message: string): TraceEvent => ({ type: 'warning', runId: 'run_1', at: 0, message });

function restored(overrides: Partial<RestoredSessionFields>): RestoredSessionFields {
  return {
    taskIndex: 0,
    pendingCalls: [],
    lastReply: null,
    lastEvaluation: null,
    fatalError: null,
    restingState: null,
    taskOutputs: null,
    progress: null,
    unpricedModels: [],
    ...overrides,
  };
}

describe('RunSession', () => {
  it('hands the held calls over once: takePendingCalls empties them', () => {
    const run = session();
    run.beginTask(0);
    const calls = [pendingCall('c1'), pendingCall('c2')];
    run.holdCalls(calls);
    expect(run.pendingCalls).toBe(calls);
    expect(run.takePendingCalls()).toBe(calls);
    expect(run.pendingCalls).toEqual([]);
    expect(run.takePendingCalls()).toEqual([]);
  });

  it('records a passing evaluation as the current task output, and a failing one only as the last evaluation', () => {
    const run = session();
    run.beginTask(0);
    run.noteReply('{"bugs":3}');
    run.recordEvaluation({ passed: false, parsed: undefined, formatted: null });
    expect(run.taskOutputs).toEqual({});
    expect(run.lastEvaluation).toEqual({ taskIndex: 0, reply: '{"bugs":3}', formatted: null });
    run.recordEvaluation({ passed: true, parsed: { bugs: 3 }, formatted: { value: { bugs: 3 } } });
    expect(run.taskOutputs).toEqual({ classify: { bugs: 3 } });
    run.beginTask(1);
    expect(run.lastReply).toBeNull();
    expect(run.transcript.messages.at(-1)?.content).toContain('Results of earlier tasks:\n{"classify":{"bugs":3}}');
  });

  it('restores the fields a journal recorded, replacing task outputs in place (the result hands out that very object)', () => {
    const run = session();
    run.beginTask(0);
    run.recordEvaluation({ passed: true, parsed: 'stale', formatted: null });
    const outputs = run.taskOutputs;
    const progress = new ProgressTracker();
    const fault = new Error('judge down');
    run.restoreFields(
      restored({
        taskIndex: 1,
        pendingCalls: [pendingCall('c9')],
        lastReply: 'draft',
        fatalError: fault,
        restingState: 'RUNNING.deciding',
        taskOutputs: { classify: { bugs: 2 } },
        progress,
        unpricedModels: ['local-llama'],
      }),
    );
    expect(run.taskOutputs).toBe(outputs);
    expect(outputs).toEqual({ classify: { bugs: 2 } });
    expect(run).toMatchObject({
      taskIndex: 1,
      lastReply: 'draft',
      fatalError: fault,
      restingState: 'RUNNING.deciding',
      unpricedModelIds: ['local-llama'],
    });
    expect(run.progress).toBe(progress);
    expect(run.pendingCalls.map(({ call }) => call.request.id)).toEqual(['c9']);
    // A record without the tracker or the outputs leaves them as they are.
    run.restoreFields(restored({ taskIndex: 1 }));
    expect(run.progress).toBe(progress);
    expect(outputs).toEqual({ classify: { bugs: 2 } });
  });

  it('keeps events recorded while replaying on result.trace but delivers them to no sink, and unmutes even when the rebuild throws', () => {
    const delivered: string[] = [];
    const run = session((event) => delivered.push(event.type === 'warning' ? event.message : event.type));
    run.whileReplaying(() => run.record(warning('replayed')));
    expect(() =>
      run.whileReplaying(() => {
        throw new Error('corrupt record');
      }),
    ).toThrow('corrupt record');
    run.record(warning('new'));
    expect(delivered).toEqual(['new']);
    expect(run.trace.map((event) => (event.type === 'warning' ? event.message : event.type))).toEqual([
      'replayed',
      'new',
    ]);
  });

  it('appends journalled trace events and warnings, or replaces both with a snapshot', () => {
    const run = session();
    run.warn('first', 0);
    run.restoreRecorded([warning('journalled')], ['journalled'], false);
    expect(run.warnings).toEqual(['first', 'journalled']);
    expect(run.trace).toHaveLength(2);
    run.restoreRecorded([warning('snapshot')], ['snapshot'], true);
    expect(run.warnings).toEqual(['snapshot']);
    expect(run.trace).toEqual([warning('snapshot')]);
    const { trace, warnings } = run.recordsForResult();
    expect(trace).toBe(run.trace);
    expect(warnings).toBe(run.warnings);
  });
});

describe('RunSession, held by a run in flight', () => {
  it('makes no Set of unpriced models until it warns of one, and keeps and restores them as before', () => {
    const config = resolveConfig({ model: scriptedModel([]) });
    const original = globalThis.Set;
    let made = 0;
    globalThis.Set = class CountedSet<T> extends original<T> {
      constructor(values?: Iterable<T> | null) {
        super(values);
        made++;
      }
    } as SetConstructor;
    let run: RunSession;
    try {
      run = new RunSession(config, 'run_1', 'Weekly report', new AbortController().signal);
    } finally {
      globalThis.Set = original;
    }
    expect(made).toBe(0);
    expect(run.unpricedModelIds).toEqual([]);
    run.warnIfUnpriced('mystery-model', 5);
    run.warnIfUnpriced('mystery-model', 6);
    expect(run.unpricedModelIds).toEqual(['mystery-model']);
    expect(run.recordsForResult().warnings).toHaveLength(1);
    run.restoreFields(restored({ unpricedModels: [] }));
    expect(run.unpricedModelIds).toEqual([]);
    run.restoreFields(restored({ unpricedModels: ['a', 'b'] }));
    expect(run.unpricedModelIds).toEqual(['a', 'b']);
    run.warnIfUnpriced('a', 7);
    expect(run.recordsForResult().warnings).toHaveLength(1);
  });
});
