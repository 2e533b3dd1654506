/**
 * Which effect the machine is waiting for, read off its state and context.
 * The driver performs exactly this effect and answers with the matching outcome event.
 */
import type { SnapshotFrom, StateValue } from 'xstate';
import { isSpendBudgetExhausted } from '../guards/budget.js';
import type { LoopMachine } from './loop-machine.js';
import type { Feedback, MachineOutput } from './types.js';

/**
 * The effect a resting machine waits for.
 * @example
 * const effect: PendingEffect = getPendingEffect(actor.getSnapshot()); // { kind: 'callModel', feedback: null, taskIndex: 0 }
 */
export type PendingEffect =
  | { kind: 'start' }
  | { kind: 'callModel'; feedback: Feedback | null; taskIndex: number }
  | { kind: 'runTools'; taskIndex: number }
  | {
      kind: 'evaluate';
      taskIndex: number;
      /** False once a token or cost budget is spent: evaluators that call a model (an LLM judge) must not run. */
      mayCallModel: boolean;
    }
  | { kind: 'sleep'; until: number }
  | { kind: 'done'; output: MachineOutput };

export type LoopSnapshot = SnapshotFrom<LoopMachine>;

/**
 * `matchesState({ [parent]: child }, value)`, as `snapshot.matches` answers it, without the state value
 * literal, the key array and the closure XState makes on each ask: the driver asks twice a step.
 */
function inState(value: StateValue, parent: string, child: string): boolean {
  if (typeof value === 'string' || !(parent in value)) return false;
  const inner = value[parent];
  if (inner === undefined) return false;
  return typeof inner === 'string' ? inner === child : child in inner;
}

/**
 * Reads which effect the machine waits for off its state and context.
 * @example
 * if (getPendingEffect(snapshot).kind === 'runTools') await runTheTools();
 */
export function getPendingEffect(
  snapshot: Pick<LoopSnapshot, 'status' | 'output' | 'context' | 'value'> & { matches(value: StateValue): boolean },
): PendingEffect {
  const { context, value } = snapshot;
  if (snapshot.status === 'done') return { kind: 'done', output: snapshot.output as MachineOutput };
  if (inState(value, 'RUNNING', 'deciding')) {
    return { kind: 'callModel', feedback: context.feedback, taskIndex: context.taskIndex };
  }
  if (inState(value, 'RUNNING', 'acting')) return { kind: 'runTools', taskIndex: context.taskIndex };
  if (inState(value, 'RUNNING', 'evaluating')) {
    return { kind: 'evaluate', taskIndex: context.taskIndex, mayCallModel: !isSpendBudgetExhausted({ context }) };
  }
  if (inState(value, 'RETRY', 'backingOff')) return { kind: 'sleep', until: context.retryAt ?? context.lastEventAt };
  if (value === 'READY' || (typeof value !== 'string' && 'READY' in value)) return { kind: 'start' };
  // Every other state is transient (eventless) and is never observed between macrosteps.
  throw new Error(`loop machine rested in a transient state: ${JSON.stringify(snapshot.value)}`);
}
