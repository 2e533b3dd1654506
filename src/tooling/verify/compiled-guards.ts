/**
 * A statechart's guards as the compiled step evaluates them (see compiled-step.ts): as XState's `evaluateGuard`
 * does, with the implementation and static params looked up once; and the loop machine's own `readingRecorded`
 * wrappers unwrapped, so the step calls the plain guard they call with the args they would give it.
 */
import { isDeadlineExceeded } from '../../../guards/budget.js';
import type { LoopMachine } from '../../../machines/loop-machine.js';
import { plainGuardOf, RECORDED } from '../../../machines/recorded-context.js';
import type { CompiledGuard, GuardArgs, PlainGuard } from './compiled-table.js';

/** A transition's guard as the step asks it: compiled, and when it is a `readingRecorded` wrapper, what it wraps. */
export interface CandidateGuard {
  guard: CompiledGuard;
  plain: PlainGuard | null;
  readsRecorded: boolean;
}

/**
 * The guards of `machine` (its own named guards, or those a test provides), compiled once each.
 *
 * @example
 * const guardOf = createGuardCompiler(loopMachine);
 * guardOf({ type: 'isStepLimitReached', params: RECORDED }).readsRecorded; // true
 */
export function createGuardCompiler(machine: LoopMachine): (guard: unknown) => CandidateGuard {
  const guards = (machine.implementations as { guards: Record<string, unknown> }).guards;
  /** A guard as XState evaluates it (`evaluateGuard`), its implementation and static params looked up once. */
  const compileGuard = (guard: unknown): CompiledGuard => {
    const inline = typeof guard === 'function';
    const named = guard as string | { type: string; params?: unknown };
    const resolved = inline ? guard : guards[typeof named === 'string' ? named : named.type];
    if (resolved === undefined)
      return () => {
        throw new Error(`Guard '${String(named)}' is not implemented.`);
      };
    if (typeof resolved !== 'function') return compileGuard(resolved);
    if ('check' in resolved) {
      // XState's own combinators (and, or, not, stateIn) read the machine and the active state of the snapshot.
      const check = (resolved as { check: (...args: unknown[]) => boolean }).check;
      return (args, leaf) =>
        check(
          { machine, context: args.context, value: leaf.value, _nodes: leaf.chain, matches: leaf.matches },
          args,
          resolved,
        );
    }
    const implementation = resolved as (args: GuardArgs, params: unknown) => boolean;
    const params = inline || typeof named === 'string' || !('params' in named) ? undefined : named.params;
    if (typeof params === 'function') {
      const paramsOf = params as (args: GuardArgs) => unknown;
      return (args) => implementation(args, paramsOf(args));
    }
    return (args) => implementation(args, params);
  };
  /** A named guard with static params of `undefined` or `RECORDED` that is a `readingRecorded` wrapper: its guard. */
  const plainOf = (guard: unknown): { plain: PlainGuard; readsRecorded: boolean } | null => {
    if (typeof guard !== 'string' && (typeof guard !== 'object' || guard === null)) return null;
    const named = guard as string | { type: string; params?: unknown };
    const params = typeof named === 'string' ? undefined : named.params;
    if (params !== undefined && params !== RECORDED) return null;
    const plain = plainGuardOf(guards[typeof named === 'string' ? named : named.type]);
    if (plain === undefined) return null;
    return { plain, readsRecorded: params === RECORDED && !readsRecordedDeadline(plain) };
  };
  const compiled = new Map<unknown, CompiledGuard>();
  return (guard) => {
    const made = compiled.get(guard) ?? compileGuard(guard);
    compiled.set(guard, made);
    const unwrapped = plainOf(guard);
    return { guard: made, plain: unwrapped?.plain ?? null, readsRecorded: unwrapped?.readsRecorded ?? false };
  };
}

/**
 * Whether `plain` is the loop's own `isDeadlineExceeded`, which answers the same on the context as the event will
 * leave it (`RECORDED`) as on the context before: it reads `startedAt`, `limits.deadlineMs` and the event's time,
 * `max(event.at, lastEventAt)`; the two events recorded for guards (a reply, a tool round) leave `startedAt` and
 * `limits` as they are and set `lastEventAt` to `max(lastEventAt, event.at)`, which leaves that maximum as it was.
 * Asked first of every reply, it would otherwise record every reply, those that stop without reading the recording
 * too. Checked for every state and outcome of the example loops in compiled-step.test.ts.
 */
function readsRecordedDeadline(plain: PlainGuard): boolean {
  return plain === isDeadlineExceeded;
}
