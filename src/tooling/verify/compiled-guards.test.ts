import { describe, expect, it } from 'vitest';
import { not } from 'xstate';
import { isDeadlineExceeded, isStepLimitReached } from '../../../guards/budget.js';
import { loopMachine, type LoopMachine } from '../../../machines/loop-machine.js';
import { RECORDED } from '../../../machines/recorded-context.js';
import { createGuardCompiler } from './compiled-guards.js';
import { collectLeaves } from './compiled-leaves.js';
import type { GuardArgs, Leaf } from './compiled-table.js';

const args = (steps: number, maxSteps: number) =>
  ({ context: { steps, limits: { maxSteps } }, event: { type: 'run.started' } }) as unknown as GuardArgs;
const leaf = collectLeaves(loopMachine.root).leaves[0] as Leaf;

describe('createGuardCompiler', () => {
  it("unwraps the loop's own readingRecorded guards, reading the recording when the params say so", () => {
    const guardOf = createGuardCompiler(loopMachine);
    expect(guardOf({ type: 'isStepLimitReached', params: RECORDED })).toMatchObject({
      plain: isStepLimitReached,
      readsRecorded: true,
    });
    expect(guardOf('isStepLimitReached')).toMatchObject({ plain: isStepLimitReached, readsRecorded: false });
    // The loop's own deadline answers the same on the context before the recording (see readsRecordedDeadline).
    expect(guardOf({ type: 'isDeadlineExceeded', params: RECORDED })).toMatchObject({
      plain: isDeadlineExceeded,
      readsRecorded: false,
    });
    // Other params: the wrapper is called as XState calls it.
    expect(guardOf({ type: 'isStepLimitReached', params: { other: true } }).plain).toBeNull();
  });

  it('compiles each guard once, answering as its implementation does', () => {
    const guardOf = createGuardCompiler(loopMachine);
    const named = { type: 'isStepLimitReached' };
    expect(guardOf(named).guard).toBe(guardOf(named).guard);
    expect(guardOf(named).guard(args(5, 5), leaf)).toBe(true);
    expect(guardOf(named).guard(args(4, 5), leaf)).toBe(false);
  });

  it('gives an inline guard and dynamic params their args, and an unknown guard throws as XState does', () => {
    const guardOf = createGuardCompiler(loopMachine);
    const inline = guardOf((guardArgs: GuardArgs) => guardArgs.context.steps > 2);
    expect([inline.plain, inline.guard(args(3, 9), leaf), inline.guard(args(2, 9), leaf)]).toEqual([null, true, false]);
    const provided = loopMachine.provide({
      guards: { hasRunStarted: (_: unknown, params: unknown) => (params as { at: number }).at === 7 },
    }) as unknown as LoopMachine;
    const dynamic = createGuardCompiler(provided)({
      type: 'hasRunStarted',
      params: ({ context }: GuardArgs) => ({ at: context.steps }),
    });
    expect([dynamic.plain, dynamic.guard(args(7, 9), leaf), dynamic.guard(args(6, 9), leaf)]).toEqual([
      null,
      true,
      false,
    ]);
    expect(() => guardOf('noSuchGuard').guard(args(0, 1), leaf)).toThrow("Guard 'noSuchGuard' is not implemented.");
  });

  it("evaluates XState's combinators with the leaf's active state", () => {
    const guardOf = createGuardCompiler(loopMachine);
    const negated = guardOf(not('isStepLimitReached'));
    expect(negated.plain).toBeNull();
    expect([negated.guard(args(5, 5), leaf), negated.guard(args(4, 5), leaf)]).toEqual([false, true]);
  });
});
