/**
 * How an effect's outcome reaches the machine: straight to it (a run without a store),
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
 * One way to perform effects and deliver their outcomes. `toMachine` (the driver's `send`) is the one
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

/** Sends an event to the run's machine (an actor or an `ActorlessRun`) and records what it did (the driver's `send`). */
export type ToMachine = (event: LoopEvent) => void;

/** A run without a store: the outcome goes straight to the machine. */
export function directDelivery(toMachine: ToMachine): Delivery {
  return {
    // No async frame of its own: a run holds this promise across its effect (a model call while a thousand other
    // runs take their turn), and an async function's frame and await closures would outlive young GCs with it.
    performAndDeliver(_kind, perform) {
      try {
        return perform().then(toMachine);
      } catch (error) {
        return Promise.reject(error as Error);
      }
    },
    deliver(event) {
      toMachine(event);
      return undefined;
    },
  };
}

/** A durable run: each event is journalled before the machine sees it; the journal may snapshot after. */
export function journalledDelivery(
  hooks: DriverHooks,
  actor: Actor<LoopMachine>,
  session: RunSession,
  toMachine: ToMachine,
): Delivery {
  const deliver = async (event: LoopEvent): Promise<void> => {
    await hooks.beforeSend(event, session);
    toMachine(event);
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
  toMachine: ToMachine,
): Delivery {
  const journalled = journalledDelivery(hooks, actor, session, toMachine);
  return {
    async performAndDeliver(kind, perform) {
      const event = await effectStep(kind, async () => {
        const outcome = await perform();
        await hooks.beforeSend(outcome, session);
        return outcome;
      });
      toMachine(event);
      await hooks.afterSend(actor, session);
    },
    deliver: journalled.deliver,
  };
}

/** A durable run's hooks and the actor whose snapshots they persist: one never goes without the other. */
export interface DurableDriving {
  readonly hooks: DriverHooks;
  readonly actor: Actor<LoopMachine>;
}

/** The delivery a run calls for: none (no hooks), a journal, or a journal inside workflow steps. */
export function deliveryFor(durable: DurableDriving | null, session: RunSession, toMachine: ToMachine): Delivery {
  if (durable === null) return directDelivery(toMachine);
  const { hooks, actor } = durable;
  if (hooks.effectStep !== undefined) return workflowStepDelivery(hooks, hooks.effectStep, actor, session, toMachine);
  return journalledDelivery(hooks, actor, session, toMachine);
}
