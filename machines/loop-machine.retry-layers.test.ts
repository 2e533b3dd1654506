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
  evaluationAskingReview,
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
  it('transport: backs off until retryAt, gives the call maxTransportAttempts attempts, then fails the task', () => {
    const first = send(startedRun(), modelFailed('transient', { at: 1_000, retryDelayMs: 250 }));
    expect(getPendingEffect(first)).toEqual({ kind: 'sleep', until: 1_250 });
    const retry1 = send(first, backoffElapsed(1_250));
    expect(getPendingEffect(retry1)).toEqual(callModelEffect({ kind: 'transport_retry' }));
    const second = send(retry1, modelFailed('transient', { at: 1_300, retryDelayMs: 500 }));
    expect(getPendingEffect(second)).toEqual({ kind: 'sleep', until: 1_800 });
    const retry2 = send(second, backoffElapsed(1_800));
    const output = expectStop(
      send(retry2, modelFailed('transient', { status: 429, message: '429 rate limited' })),
      'retries_exhausted',
    );
    expect(output.usage.modelCalls).toBe(3);
    expect(output.steps).toBe(0);
    expect(output.detail).toBe(
      'task answer: 3rd consecutive transport failure of model call 1 (HTTP 429); raise limits.maxTransportAttempts (3). Last error: 429 rate limited',
    );
  });

  it('transport: isolated failures over a long run never add up, each recovered on its first retry', () => {
    // Twelve decisions; the 1st, 4th, 8th and 12th calls fail once first. The old per-task count stopped this run.
    const events: LoopEvent[] = [];
    for (let step = 1; step <= 12; step++) {
      if ([1, 4, 8, 12].includes(step)) events.push(modelFailed(), backoffElapsed());
      events.push(
        step === 12 ? finalReply() : toolCallsReply(),
        ...(step === 12 ? [evaluationPassed()] : [toolsCompleted()]),
      );
    }
    const output = expectStop(
      send(startedRun({ limits: { maxSteps: 12, maxStepsPerTask: 12 } }), ...events),
      'completed',
    );
    expect(output.usage.modelCalls).toBe(16);
  });

  it("transport: the backoff exponent and the attempts restart with each call (the counter is the call's)", () => {
    const recovered = send(
      startedRun(),
      modelFailed(),
      backoffElapsed(),
      modelFailed(),
      backoffElapsed(),
      toolCallsReply(),
    );
    expect(recovered.context.transport).toEqual({ consecutiveFailures: 0, retries: 2 });
    const again = send(recovered, toolsCompleted(), modelFailed(), backoffElapsed(), modelFailed());
    expect(getPendingEffect(again).kind).toBe('sleep');
    // The second failure of the second call: its second backoff, the run's fourth retry.
    expect(again.context.transport).toEqual({ consecutiveFailures: 2, retries: 4 });
  });

  it('transport: the run-wide maxTransportRetries stops isolated failures once spent, naming the option', () => {
    const run = startedRun({ limits: { maxTransportRetries: 2 } });
    const twoRecovered = send(
      run,
      modelFailed(),
      backoffElapsed(),
      toolCallsReply(),
      toolsCompleted(),
      modelFailed(),
      backoffElapsed(),
      toolCallsReply(),
      toolsCompleted(),
    );
    const output = expectStop(
      send(twoRecovered, modelFailed('transient', { status: 502, message: 'bad gateway' })),
      'retries_exhausted',
    );
    expect(output.detail).toBe(
      "task answer: model call 3 failed (HTTP 502) with the run's transport retries spent (2 of maxTransportRetries 2); raise limits.maxTransportRetries. Last error: bad gateway",
    );
  });

  it('transport: a 429 whose Retry-After ends past the deadline stops at once, naming the 429 and the wait', () => {
    // Started at 0 with a 60 s deadline; a 429 at 50 s asks for 30 s.
    const event = modelFailed('transient', {
      at: 50_000,
      status: 429,
      retryAfterMs: 30_000,
      retryDelayMs: 30_000,
      message: 'slow down',
    });
    const output = expectStop(send(startedRun(), event), 'deadline_exceeded');
    expect(output.detail).toBe(
      'model call 1 failed (HTTP 429) and the server asked to wait 30000 ms (Retry-After): the retry would start 20000 ms after the deadline (60000 ms; 10000 ms were left), so the run stopped without waiting; raise limits.deadlineMs (or lower retry.maxRetryAfterMs)',
    );
  });

  it('reflection: reflects maxRetries times on a failing evaluation, then fails the task', () => {
    const twice = send(
      startedRun(),
      finalReply(),
      evaluationRejected('reason 1'),
      finalReply(),
      evaluationRejected('reason 2'),
    );
    expect(getPendingEffect(twice)).toEqual(callModelEffect({ kind: 'reflection', reason: 'reason 2' }));
    const output = expectStop(send(twice, finalReply(), evaluationRejected('reason 3')), 'retries_exhausted');
    expect(output.usage.modelCalls).toBe(3);
    expect(output.detail).toBe(
      'task answer: evaluation still failing after 2 reflection retries: reason 3; raise limits.maxRetries',
    );
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
    const output = expectStop(
      send(repairing, toolCallsReply({ invalidCalls: 1, parseError: 'schema:limit' })),
      'retries_exhausted',
    );
    expect(output.usage.toolCalls).toBe(0);
    expect(output.detail).toBe(
      'task answer: tool arguments still invalid after 1 repair(s); raise limits.maxArgumentRepairs',
    );
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
    const output = expectStop(
      send(startedRun(), modelFailed('fatal', { message: '401 invalid api key' })),
      'fatal_error',
    );
    expect(output.detail).toBe('model call failed: 401 invalid api key');
    expect(output.usage.modelCalls).toBe(1);
  });

  it('is fatal even with every transport retry left', () => {
    const afterOneRetry = send(startedRun(), modelFailed(), backoffElapsed());
    expectStop(send(afterOneRetry, modelFailed('fatal')), 'fatal_error');
  });
});

describe('retry layers keep separate counters', () => {
  /** Two transport retries of one call: two transient failures, each followed by its backoff. */
  const bothTransportRetries = (): LoopEvent[] => [modelFailed(), backoffElapsed(), modelFailed(), backoffElapsed()];

  it('two transport retries, then two reflection retries in the same task, are all allowed with maxRetries 2', () => {
    const afterTransport = send(startedRun(), ...bothTransportRetries());
    expect(afterTransport.context.transport).toEqual({ consecutiveFailures: 2, retries: 2 });
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

  it('a reflection is not a transport retry: the reflected call has its own attempts, and reflections stay counted', () => {
    const reflecting = send(startedRun(), ...bothTransportRetries(), finalReply(), evaluationRejected('reason 1'));
    expect(reflecting.context.task.reflectionRetries).toBe(1);
    const retried = send(reflecting, modelFailed(), backoffElapsed(), modelFailed());
    expect(getPendingEffect(retried).kind).toBe('sleep');
    const output = expectStop(send(retried, backoffElapsed(), modelFailed()), 'retries_exhausted');
    expect(output.detail).toContain('3rd consecutive transport failure of model call 2 (HTTP 503)');
    expect(output.usage.modelCalls).toBe(6);
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

describe('a review of the output', () => {
  it('stops with needs_human at once: no reflection, no retry counted, whatever the budget left', () => {
    const output = expectStop(
      send(startedRun(), finalReply(), evaluationAskingReview('a person must look')),
      'needs_human',
    );
    expect(output.status).toBe('needs_human');
    expect(output.detail).toBe(
      "task answer: the output waits for a person's review (see pendingReview): a person must look",
    );
  });

  it("a person's verdict in its place: accepted completes, rejected is a reflection counted against maxRetries", () => {
    const asked = send(startedRun(), finalReply());
    expectStop(send(asked, evaluationPassed()), 'completed');
    const rejected = send(asked, evaluationRejected('a person reviewed it and rejected it: too much'));
    expect(rejected.context.task.reflectionRetries).toBe(1);
    expect(getPendingEffect(rejected)).toEqual(
      callModelEffect({ kind: 'reflection', reason: 'a person reviewed it and rejected it: too much' }),
    );
  });
});
