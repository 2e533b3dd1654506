/**
 * The narrow door through which a durable run (src/engine/durable/) takes part in driving: it journals each
 * event before the machine sees it, rebuilds a resumed run instead of starting it, and gates each
 * effect (a store-wide pause, a cancel asked for from elsewhere). A run without a store has no hooks.
 */
import type { Actor, Snapshot } from 'xstate';
import type { LoopMachine } from '../../../machines/index.js';
import type { LoopEvent } from '../../../machines/types.js';
import type { PendingEffect } from '../../../machines/index.js';
import type { ToolHealth } from '../tools/index.js';
import type { RunSession } from './run-session.js';

/** What `restore` gets to rebuild a run with. */
export interface RestoreTarget {
  actor: Actor<LoopMachine>;
  session: RunSession;
  health: ToolHealth;
  /** Sends an event as the driver does (trace, warnings), without journalling it: for events already in the journal. */
  send(event: LoopEvent): void;
  /** Journals, then sends: for a new event. */
  deliver(event: LoopEvent): Promise<void>;
}

export interface DriverHooks {
  /** The machine snapshot a resumed run starts from; undefined starts it fresh. */
  readonly machineSnapshot: Snapshot<unknown> | undefined;
  /** Rebuilds a resumed run; false for a new run, which the driver then starts. */
  restore(target: RestoreTarget): Promise<boolean>;
  /** Journals the event before the machine sees it. */
  beforeSend(event: LoopEvent, session: RunSession): Promise<void>;
  /** After the machine took the event: snapshots now and then. */
  afterSend(actor: Actor<LoopMachine>, session: RunSession): Promise<void>;
  /** Commits every event journalled so far (learning writes their outcomes only after). */
  commit(): Promise<void>;
  /**
   * Before each effect (of kind `kind`): commits what must be durable before it, waits out a pause, and
   * aborts the run when a cancel was asked for. True when every event so far is committed now (a tool round
   * may run before its step is committed), so what they tell may be written elsewhere (learning).
   */
  beforeEffect(session: RunSession, controller: AbortController, kind: EffectKind): Promise<boolean>;
  /**
   * Performs one effect as a durable step of a workflow engine (DBOS): `perform` runs the effect and
   * journals its outcome; the step returns the outcome for the machine. Absent: effects run directly.
   */
  readonly effectStep?: EffectStep | undefined;
}

/** The kinds of effect the driver performs. */
export type EffectKind = Exclude<PendingEffect['kind'], 'done'>;

/** Runs `perform` (an effect of kind `kind`, then the journalling of its outcome) as one durable step. */
export type EffectStep = (kind: string, perform: () => Promise<LoopEvent>) => Promise<LoopEvent>;
