/**
 * The three deliveries, each on a real loop actor and session with hooks that write down what happened
 * in order: where the outcome is journalled, where the effect runs, and when the machine sees the event.
 */
import { createActor } from 'xstate';
import { describe, expect, it } from 'vitest';
import { loopMachine } from '../../../machines/index.js';
import type { LoopEvent } from '../../../machines/types.js';
import { resolveConfig } from '../config/config.js';
import { scriptedModel } from '../../testing/index.js';
import { deliveryFor, directDelivery, journalledDelivery, workflowStepDelivery } from './delivery.js';
import type { DriverHooks, EffectStep } from './driver-hooks.js';
import { RunSession } from './run-session.js';

const elapsed: LoopEvent = { type: 'backoff.elapsed', at: 5 };
const started: LoopEvent = { type: 'run.started', at: 0, nextRequestTokens: 10 };

function fixture(effectStep?: EffectStep) {
  const config = resolveConfig({ model: scriptedModel([]) });
  const session = new RunSession(config, 'run_1', 'goal', new AbortController().signal);
  const actor = createActor(loopMachine, {
    input: { limits: config.limits, noProgress: config.noProgress, tasks: [] },
  });
  const log: string[] = [];
  const hooks: DriverHooks = {
    machineSnapshot: undefined,
    restore: async () => false,
    beforeSend: async (event) => void log.push(`journal ${event.type}`),
    afterSend: async () => void log.push('after send'),
    beforeEffect: async () => true,
    commit: async () => undefined,
    ...(effectStep ? { effectStep } : {}),
  };
  const toMachine = (event: LoopEvent) => void log.push(`actor ${event.type}`);
  const perform = async () => {
    log.push('perform');
    return elapsed;
  };
  return { session, actor, log, hooks, toMachine, perform };
}

describe('Delivery', () => {
  it('direct: hands the outcome straight to the actor, and other events synchronously (no promise)', async () => {
    const { log, toMachine, perform } = fixture();
    const delivery = directDelivery(toMachine);
    expect(delivery.deliver(started)).toBeUndefined();
    expect(log).toEqual(['actor run.started']);
    await delivery.performAndDeliver('sleep', perform);
    expect(log).toEqual(['actor run.started', 'perform', 'actor backoff.elapsed']);
  });

  it('direct: no async frame of its own across the effect, and an effect that throws at once rejects as one that rejects', async () => {
    const { log, toMachine } = fixture();
    const delivery = directDelivery(toMachine);
    // A run holds this promise across its model call: an async function's frame would be held (and promoted) with it.
    expect(delivery.performAndDeliver.constructor.name).toBe('Function');
    const thrown = delivery.performAndDeliver('sleep', () => {
      throw new Error('prompt function threw');
    });
    expect(thrown).toBeInstanceOf(Promise);
    await expect(thrown).rejects.toThrow('prompt function threw');
    await expect(
      delivery.performAndDeliver('sleep', () => Promise.reject(new Error('model rejected'))),
    ).rejects.toThrow('model rejected');
    expect(log).toEqual([]);
    // What it resolves to once the actor has the outcome: nothing (the driver reads the actor's snapshot).
    await expect(delivery.performAndDeliver('sleep', async () => elapsed)).resolves.toBeUndefined();
    expect(log).toEqual(['actor backoff.elapsed']);
  });

  it('journalled: journals each event before the machine sees it, then lets the journal snapshot', async () => {
    const { session, actor, log, hooks, toMachine, perform } = fixture();
    const delivery = journalledDelivery(hooks, actor, session, toMachine);
    await delivery.deliver(started);
    await delivery.performAndDeliver('sleep', perform);
    expect(log).toEqual([
      'journal run.started',
      'actor run.started',
      'after send',
      'perform',
      'journal backoff.elapsed',
      'actor backoff.elapsed',
      'after send',
    ]);
  });

  it('journalled: an event the journal could not write never reaches the machine', async () => {
    const { session, actor, log, hooks, toMachine, perform } = fixture();
    const delivery = journalledDelivery(
      { ...hooks, beforeSend: () => Promise.reject(new Error('disk full')) },
      actor,
      session,
      toMachine,
    );
    await expect(delivery.performAndDeliver('sleep', perform)).rejects.toThrow('disk full');
    expect(log).toEqual(['perform']);
  });

  it('workflow step: performs and journals inside the step; the machine takes the outcome after it', async () => {
    const steps: string[] = [];
    const effectStep: EffectStep = async (kind, run) => {
      steps.push(kind);
      const event = await run();
      log.push('step done');
      return event;
    };
    const { session, actor, log, hooks, toMachine, perform } = fixture(effectStep);
    const delivery = workflowStepDelivery(hooks, effectStep, actor, session, toMachine);
    await delivery.performAndDeliver('sleep', perform);
    expect(steps).toEqual(['sleep']);
    expect(log).toEqual(['perform', 'journal backoff.elapsed', 'step done', 'actor backoff.elapsed', 'after send']);
  });

  it('workflow step: a recovered step returns its recorded outcome without performing the effect again', async () => {
    const recorded: LoopEvent = { type: 'backoff.elapsed', at: 99 };
    const { session, actor, log, hooks, toMachine, perform } = fixture();
    const seen: LoopEvent[] = [];
    const delivery = workflowStepDelivery(
      hooks,
      async () => recorded,
      actor,
      session,
      (event) => {
        seen.push(event);
        toMachine(event);
      },
    );
    await delivery.performAndDeliver('sleep', perform);
    expect(seen).toEqual([recorded]);
    expect(log).toEqual(['actor backoff.elapsed', 'after send']);
  });

  it('workflow step: events that are no effect outcome are journalled, not stepped', async () => {
    const effectStep: EffectStep = () => Promise.reject(new Error('not a step'));
    const { session, actor, log, hooks, toMachine } = fixture(effectStep);
    await workflowStepDelivery(hooks, effectStep, actor, session, toMachine).deliver(started);
    expect(log).toEqual(['journal run.started', 'actor run.started', 'after send']);
  });

  it('is chosen once from the hooks: none, a journal, or a journal inside workflow steps', async () => {
    const direct = fixture();
    expect(deliveryFor(null, direct.session, direct.toMachine).deliver(started)).toBeUndefined();
    const journalled = fixture();
    await deliveryFor(journalled, journalled.session, journalled.toMachine).performAndDeliver(
      'sleep',
      journalled.perform,
    );
    expect(journalled.log).toEqual(['perform', 'journal backoff.elapsed', 'actor backoff.elapsed', 'after send']);
    const kinds: string[] = [];
    const stepped = fixture(async (kind, run) => {
      kinds.push(kind);
      return run();
    });
    await deliveryFor(stepped, stepped.session, stepped.toMachine).performAndDeliver('callModel', stepped.perform);
    expect(kinds).toEqual(['callModel']);
  });
});
