/**
 * The loop machine's retry layers (transport, reflection, argument repair), each with its own counter,
 * and the fatal failures no layer retries.
 */
import { describe, expect, it } from 'vitest';
import { getPendingEffect } from './pending-effect.js';
import type { LoopEvent } from './types.js';
import {
  backoffElapsed,
  callModelEffect,
  evaluationPassed,
  evaluationRejected,
  expectStop,
  finalReply,
  modelFailed,
  send,
  startedRun,
  toolCallsReply,
  toolsCompleted,
} from '../test/support/statechart-fixtures.js';

describe('retries_exhausted', () => {
  it('transport: backs off until retryAt, retries maxRetries times, then fails the task', () => {
    const first = send(startedRun(), modelFailed('transient', { at: 1_000, retryDelayMs: 250 }));
    expect(getPendingEffect(first)).toEqual({ kind: 'sleep', until: 1_250 });
    const retry1 = send(first, backoffElapsed(1_250));
    expect(getPendingEffect(retry1)).toEqual(callModelEffect({ kind: 'transport_retry' }));
    const second = send(retry1, modelFailed('transient', { at: 1_300, retryDelayMs: 500 }));
    expect(getPendingEffect(second)).toEqual({ kind: 'sleep', until: 1_800 });
    const retry2 = send(second, backoffElapsed(1_800));
    const output = expectStop(send(retry2, modelFailed('transient', { message: '429 rate limited' })), 'retries_exhausted');
    expect(output.usage.modelCalls).toBe(3);
    expect(output.steps).toBe(0);
    expect(output.detail).toBe('task answer: model call failed after 2 transport retries: 429 rate limited; raise limits.maxRetries');
  });

  it('reflection: reflects maxRetries times on a failing evaluation, then fails the task', () => {
    const twice = send(startedRun(), finalReply(), evaluationRejected('reason 1'), finalReply(), evaluationRejected('reason 2'));
    expect(getPendingEffect(twice)).toEqual(callModelEffect({ kind: 'reflection', reason: 'reason 2' }));
    const output = expectStop(send(twice, finalReply(), evaluationRejected('reason 3')), 'retries_exhausted');
    expect(output.usage.modelCalls).toBe(3);
    expect(output.detail).toBe('task answer: evaluation still failing after 2 reflection retries: reason 3; raise limits.maxRetries');
  });

  it('reflection: a repeated reason that cannot reflect any more fails the task rather than nudging', () => {
    const output = expectStop(
      send(
        startedRun({ limits: { maxRetries: 1 } }),
        finalReply(),
        evaluationRejected('missing total'),
        finalReply(),
        evaluationRejected('missing total'),
      ),
      'retries_exhausted',
    );
    expect(output.steps).toBe(2);
  });

  it('argument repair: one repair is allowed, a second invalid reply in a row fails the task', () => {
    const repairing = send(startedRun(), toolCallsReply({ invalidCalls: 1, parseError: 'schema:order_id' }));
    expect(getPendingEffect(repairing)).toEqual(callModelEffect({ kind: 'argument_repair' }));
    const output = expectStop(send(repairing, toolCallsReply({ invalidCalls: 1, parseError: 'schema:limit' })), 'retries_exhausted');
    expect(output.usage.toolCalls).toBe(0);
    expect(output.detail).toBe('task answer: tool arguments still invalid after 1 repair(s); raise limits.maxArgumentRepairs');
  });

  it('argument repair: a valid decision in between gives the model its repair back', () => {
    const snapshot = send(
      startedRun(),
      toolCallsReply({ invalidCalls: 1, parseError: 'schema:order_id' }),
      toolCallsReply(),
      toolsCompleted(),
      toolCallsReply({ invalidCalls: 1, parseError: 'schema:limit' }),
    );
    expect(getPendingEffect(snapshot)).toEqual(callModelEffect({ kind: 'argument_repair' }));
  });
});

describe('fatal_error', () => {
  it('stops on a fatal model failure without backing off', () => {
    const output = expectStop(send(startedRun(), modelFailed('fatal', { message: '401 invalid api key' })), 'fatal_error');
    expect(output.detail).toBe('model call failed: 401 invalid api key');
    expect(output.usage.modelCalls).toBe(1);
  });

  it('is fatal even with every transport retry left', () => {
    const afterOneRetry = send(startedRun(), modelFailed(), backoffElapsed());
    expectStop(send(afterOneRetry, modelFailed('fatal')), 'fatal_error');
  });
});

describe('retry layers keep separate counters', () => {
  /** Both transport retries of the task used: two transient failures, each followed by its backoff. */
  const bothTransportRetries = (): LoopEvent[] => [modelFailed(), backoffElapsed(), modelFailed(), backoffElapsed()];

  it('two transport retries, then two reflection retries in the same task, are all allowed with maxRetries 2', () => {
    const afterTransport = send(startedRun(), ...bothTransportRetries());
    expect(afterTransport.context.task.transportRetries).toBe(2);
    const firstReflection = send(afterTransport, finalReply(), evaluationRejected('reason 1'));
    expect(getPendingEffect(firstReflection)).toEqual(callModelEffect({ kind: 'reflection', reason: 'reason 1' }));
    const secondReflection = send(firstReflection, finalReply(), evaluationRejected('reason 2'));
    expect(getPendingEffect(secondReflection)).toEqual(callModelEffect({ kind: 'reflection', reason: 'reason 2' }));
    const output = expectStop(send(secondReflection, finalReply(), evaluationPassed()), 'completed');
    expect(output.usage.modelCalls).toBe(5);
  });

  it('model calls of a task are bounded additively: 2 transport failures + 1 + 2 reflections, never multiplied', () => {
    const output = expectStop(
      send(
        startedRun(),
        ...bothTransportRetries(),
        finalReply(),
        evaluationRejected('reason 1'),
        finalReply(),
        evaluationRejected('reason 2'),
        finalReply(),
        evaluationRejected('reason 3'),
      ),
      'retries_exhausted',
    );
    expect(output.usage.modelCalls).toBe(5);
  });

  it('a reflection does not give the transport layer its retries back', () => {
    const reflecting = send(startedRun(), ...bothTransportRetries(), finalReply(), evaluationRejected('reason 1'));
    const output = expectStop(send(reflecting, modelFailed()), 'retries_exhausted');
    expect(output.detail).toContain('after 2 transport retries');
    expect(output.usage.modelCalls).toBe(4);
  });

  it('an argument repair is allowed after transport and reflection retries are used up', () => {
    const used = send(
      startedRun(),
      ...bothTransportRetries(),
      finalReply(),
      evaluationRejected('reason 1'),
      finalReply(),
      evaluationRejected('reason 2'),
    );
    expect(getPendingEffect(send(used, toolCallsReply({ invalidCalls: 1, parseError: 'schema:order_id' })))).toEqual(
      callModelEffect({ kind: 'argument_repair' }),
    );
  });
});
