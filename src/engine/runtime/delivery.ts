/**
 * How an effect's outcome reaches the machine: straight to the actor (a run without a store),
 * journalled first (a durable run), or as one durable step of a workflow engine (DBOS), which
 * performs the effect and journals its outcome inside the step. The driver picks one per run and
 * never branches on it again.
 */
import type { Actor } from 'xstate';
import type { LoopMachine } from '../../../machines/index.js';
import type { LoopEvent } from '../../../machines/types.js';
import type { DriverHooks, EffectStep } from './driver-hooks.js';
import type { RunSession } from './run-session.js';

/**
 * One way to perform effects and deliver their outcomes. `toActor` (the driver's `send`) is the one
 * place an event reaches the machine; every delivery ends there.
 */
export interface Delivery {
  /** Performs an effect of kind `kind` and delivers the outcome event it resolves to. */
  performAndDeliver(kind: string, perform: () => Promise<LoopEvent>): Promise<void>;
  /**
   * Delivers an event that is no effect's outcome (`run.started`, `run.faulted`, a resumed run's
   * decision). Direct delivery is synchronous and returns undefined: no promise on the hot path.
   */
  deliver(event: LoopEvent): Promise<void> | undefined;
}

/** Sends an event to the actor and records what it did (the driver's `send`). */
export type ToActor = (event: LoopEvent) => void;

/** A run without a store: the outcome goes straight to the actor. */
export function directDelivery(toActor: ToActor): Delivery {
  return {
    // No async frame of its own: a run holds this promise across its effect (a model call while a thousand other
    // runs take their turn), and an async function's frame and await closures would outlive young GCs with it.
    performAndDeliver(_kind, perform) {
      try {
        return perform().then(toActor);
      } catch (error) {
        return Promise.reject(error as Error);
      }
    },
    deliver(event) {
      toActor(event);
      return undefined;
    },
  };
}

/** A durable run: each event is journalled before the machine sees it; the journal may snapshot after. */
export function journalledDelivery(
  hooks: DriverHooks,
  actor: Actor<LoopMachine>,
  session: RunSession,
  toActor: ToActor,
): Delivery {
  const deliver = async (event: LoopEvent): Promise<void> => {
    await hooks.beforeSend(event, session);
    toActor(event);
    await hooks.afterSend(actor, session);
  };
  return {
    async performAndDeliver(_kind, perform) {
      await deliver(await perform());
    },
    deliver,
  };
}

/**
 * A run a workflow engine drives (DBOS): the effect and the journalling of its outcome are one durable
 * step, so a recovered workflow returns the recorded outcome instead of performing the effect again;
 * the machine takes the outcome after the step. Other events are journalled as in a durable run.
 */
export function workflowStepDelivery(
  hooks: DriverHooks,
  effectStep: EffectStep,
  actor: Actor<LoopMachine>,
  session: RunSession,
  toActor: ToActor,
): Delivery {
  const journalled = journalledDelivery(hooks, actor, session, toActor);
  return {
    async performAndDeliver(kind, perform) {
      const event = await effectStep(kind, async () => {
        const outcome = await perform();
        await hooks.beforeSend(outcome, session);
        return outcome;
      });
      toActor(event);
      await hooks.afterSend(actor, session);
    },
    deliver: journalled.deliver,
  };
}

/** The delivery a run's hooks call for: none, a journal, or a journal inside workflow steps (which need the run's actor). */
export function deliveryFor(
  hooks: DriverHooks | undefined,
  actor: Actor<LoopMachine> | null,
  session: RunSession,
  toActor: ToActor,
): Delivery {
  if (hooks === undefined || actor === null) return directDelivery(toActor);
  if (hooks.effectStep !== undefined) return workflowStepDelivery(hooks, hooks.effectStep, actor, session, toActor);
  return journalledDelivery(hooks, actor, session, toActor);
}
