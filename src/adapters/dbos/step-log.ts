/**
 * A run's workflow as DBOS sees it: a leg records where it was entered, the verdict on the decisions it
 * was given, and how it stopped; the driver's effects in between are journalled, not checkpointed.
 *
 * Why effects are not DBOS steps: the run's state lives in the journal (a `postgresStore`), and a DBOS
 * step's output would be recorded *after* the journal record of the same effect, so it could never settle
 * an effect the journal had not settled already: a crash before the journal record re-runs the effect
 * either way (a model call again; a non-idempotent tool is guarded by its intent record and
 * `checkOutcome`, as in the embedded mode), a crash after it finds the effect in the journal. Each
 * checkpoint cost 1.5–3 ms and a loop step has two effects, so dropping them is most of what DBOS added
 * per step (bench/RESULTS.md). Recovery is the embedded mode's, which the crash tests prove at every
 * effect boundary: DBOS re-runs the workflow, the journal serves what completed, leases keep a second
 * execution of it from journalling.
 *
 * How the steps are re-entered: DBOS recovers a workflow by running its function again from the start,
 * serving each step it recorded by position. A re-entered workflow first *drains* the steps it recorded
 * before: each comes back recorded, without running, until the first position nothing was recorded at.
 * That position gets an `entered` marker (a no-op step), and the leg is driven on from the journal, so
 * step positions and journal never disagree. A leg whose end was recorded is not driven again. All
 * steps share one name because a drained position can hold any of them (workflows recorded by earlier
 * versions, with an `effect` step per effect, drain the same way).
 */
import type { DBOS as DBOSType } from '@dbos-inc/dbos-sdk';
import type { LoopEvent } from '../../../machines/types.js';
import type { RunResult } from '../../engine/runtime/run-result.js';

/** The name of every step of a run's workflow. */
export const RUN_STEP_NAME = 'loopstate.step';

/**
 * How a leg stopped: at a stop of the run; handed to a successor workflow after `stepsPerWorkflow`
 * effects, or after a store error (`failure`: the successor tries again from the journal); or refused the decisions it was given (nothing changed; `result` is the stop the run still waits at).
 */
export type LegOutcome =
  | { kind: 'stopped'; result: RunResult }
  | { kind: 'handoff'; effects: number; failure?: string; reviewId?: string }
  | { kind: 'refused'; code: string; message: string; result: RunResult | null };

/**
 * What a leg given decisions recorded of them before driving: `approve` reads it to answer the person.
 * `reviewId`: the stop a review decision was checked against, so a re-entered leg or a successor sends it
 * on bound to that stop (never to a later one the run stopped at since).
 */
export type DecisionsVerdict =
  | { kind: 'decisions'; accepted: true; reviewId?: string }
  | { kind: 'decisions'; accepted: false; code: string; message: string };

type StepOutput =
  | { kind: 'entered' }
  | DecisionsVerdict
  // Recorded by earlier versions (an effect a step): drained like the others.
  | { kind: 'effect'; effect: string; event: string }
  | { kind: 'effect-failed'; effect: string; message: string }
  | { kind: 'leg-end'; outcome: LegOutcome };

/** Thrown out of the driver when a workflow has run its share of effects: a successor continues the run. */
export class LegHandoff extends Error {
  constructor(readonly effects: number) {
    super(`the workflow ran ${effects} effects; a successor workflow continues the run`);
    this.name = 'LegHandoff';
  }
}

export class StepLog {
  private effects = 0;
  /** The verdict an earlier execution of this workflow recorded: taken as it is, never checked again. */
  private drainedVerdict: DecisionsVerdict | null = null;

  /** `stopping`: the worker drains; the leg hands the run on at its next effect instead of performing it. */
  constructor(
    private readonly dbos: typeof DBOSType,
    private readonly stepsPerWorkflow: number,
    private readonly stopping: () => boolean = () => false,
  ) {}

  /** Drains what an earlier execution of this workflow recorded: its leg's outcome if it ended, else null (drive it now). */
  async enter(): Promise<LegOutcome | null> {
    for (;;) {
      let fresh = false;
      const output = await this.dbos.runStep(
        async (): Promise<StepOutput> => {
          fresh = true;
          return { kind: 'entered' };
        },
        { name: RUN_STEP_NAME },
      );
      if (fresh) return null;
      if (output.kind === 'leg-end') return output.outcome;
      if (output.kind === 'decisions') this.drainedVerdict = output;
      // An earlier `entered` or effect: its outcome is in the journal the leg is rebuilt from.
    }
  }

  /**
   * One effect, performed and journalled by `perform` (no DBOS step: see above); past the workflow's
   * share, or while the worker drains, the run goes on in a successor instead.
   */
  readonly effect = async (_kind: string, perform: () => Promise<LoopEvent>): Promise<LoopEvent> => {
    if (this.effects >= this.stepsPerWorkflow || this.stopping()) throw new LegHandoff(this.effects);
    this.effects += 1;
    return perform();
  };

  /**
   * Records whether the decisions the leg was given fit the run, once: a re-entered leg takes the verdict it
   * drained (checked again, a decision it applied would be checked against the stop the run reached since).
   * `check` returns the review id the decision is bound to, if any.
   */
  async verdict(check: () => Promise<string | null | undefined>): Promise<DecisionsVerdict> {
    if (this.drainedVerdict !== null) return this.drainedVerdict;
    const output = await this.dbos.runStep(
      async (): Promise<StepOutput> => {
        try {
          const reviewId = await check();
          return { kind: 'decisions', accepted: true, ...(typeof reviewId === 'string' ? { reviewId } : {}) };
        } catch (error) {
          const { code, message } = error as { code?: unknown; message?: unknown };
          return {
            kind: 'decisions',
            accepted: false,
            code: typeof code === 'string' ? code : 'approval_refused',
            message: typeof message === 'string' ? message : String(error),
          };
        }
      },
      { name: RUN_STEP_NAME },
    );
    return output.kind === 'decisions' ? output : { kind: 'decisions', accepted: true };
  }

  /**
   * Records how the leg stopped (once; a re-entered workflow finds it in `enter`). The outcome is recorded
   * whole, its result's trace too: a re-entered workflow returns this result as its output, and the workflow's
   * output is what `client.result` gives, trace and all (the client may have no store to read it from). So a
   * resumed run's earlier trace, still in the journal's chunks (`withTrace`), is read here at each stop of a
   * leg, and a damaged trace chunk fails this step after the leg's work is committed: the run stays at its stop
   * in the journal, and reading its result back is refused with `corrupt_record` the same way.
   */
  async end(outcome: LegOutcome): Promise<LegOutcome> {
    const output = await this.dbos.runStep(
      async (): Promise<StepOutput> => ({
        kind: 'leg-end',
        outcome: JSON.parse(JSON.stringify(outcome)) as LegOutcome,
      }),
      { name: RUN_STEP_NAME },
    );
    return output.kind === 'leg-end' ? output.outcome : outcome;
  }
}
