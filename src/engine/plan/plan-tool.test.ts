import { describe, expect, it } from 'vitest';
import { PLAN_TOOL_NAME, RunPlan, type PlanItem } from './plan-tool.js';

const context = { signal: new AbortController().signal, idempotencyKey: 'k', runId: 'r', callId: 'c' };
const item = (id: string, status: PlanItem['status']): PlanItem => ({ id, title: `Item ${id}`, status });

async function update(plan: RunPlan, items: PlanItem[]) {
  const parsed = plan.tool.input.parse({ items });
  const text = await plan.tool.execute(parsed, context);
  return { text, facts: plan.takeRoundFacts() };
}

describe('RunPlan', () => {
  it('offers update_plan, a read tool whose repeats are harmless', () => {
    const plan = new RunPlan();
    expect(plan.tool).toMatchObject({ name: PLAN_TOOL_NAME, access: 'read', idempotent: true });
    expect(plan.takeRoundFacts()).toBeNull();
  });

  it('counts an item that was open and is now done or removed as progress, and reports the open items', async () => {
    const plan = new RunPlan();
    expect((await update(plan, [item('a', 'in_progress'), item('b', 'pending')])).facts).toEqual({
      openItems: 2,
      progressed: false,
    });
    expect((await update(plan, [item('a', 'done'), item('b', 'in_progress')])).facts).toEqual({
      openItems: 1,
      progressed: true,
    });
    expect((await update(plan, [item('a', 'done'), item('b', 'removed')])).facts).toEqual({
      openItems: 0,
      progressed: true,
    });
  });

  it('counts an open item dropped from the list as progress, like "removed"', async () => {
    const plan = new RunPlan();
    await update(plan, [item('a', 'pending'), item('b', 'pending')]);
    expect((await update(plan, [item('a', 'in_progress')])).facts).toEqual({ openItems: 1, progressed: true });
  });

  it('does not count an item that arrives already done: adding and closing throwaway items is not progress', async () => {
    const plan = new RunPlan();
    await update(plan, [item('a', 'in_progress')]);
    expect((await update(plan, [item('a', 'in_progress'), item('junk-1', 'done')])).facts).toEqual({
      openItems: 1,
      progressed: false,
    });
    expect((await update(plan, [item('a', 'in_progress'), item('junk-2', 'removed')])).facts).toEqual({
      openItems: 1,
      progressed: false,
    });
    // A closed item that stays closed is not progress again either.
    expect((await update(plan, [item('a', 'in_progress'), item('junk-1', 'done')])).facts?.progressed).toBe(false);
  });

  it('sending the same plan again changes nothing and says so in the same words', async () => {
    const plan = new RunPlan();
    const first = await update(plan, [item('a', 'in_progress')]);
    const again = await update(plan, [item('a', 'in_progress')]);
    expect(again).toEqual(first);
    expect(again.text).toBe('Plan updated: 0 of 1 done, 1 open.\n- [in_progress] a: Item a');
  });

  it('keeps progress from several updates in one round until the facts are taken', async () => {
    const plan = new RunPlan();
    await update(plan, [item('a', 'in_progress'), item('b', 'pending')]);
    await plan.tool.execute(plan.tool.input.parse({ items: [item('a', 'done'), item('b', 'pending')] }), context);
    await plan.tool.execute(plan.tool.input.parse({ items: [item('a', 'done'), item('b', 'in_progress')] }), context);
    expect(plan.takeRoundFacts()).toEqual({ openItems: 1, progressed: true });
  });

  it('refuses an empty plan and duplicate ids, naming the field', () => {
    const plan = new RunPlan();
    expect(plan.tool.input.safeParse({ items: [] }).success).toBe(false);
    const duplicate = plan.tool.input.safeParse({ items: [item('a', 'pending'), item('a', 'done')] });
    expect(duplicate.success).toBe(false);
    expect(duplicate.error?.issues[0]).toMatchObject({
      path: ['items', 1, 'id'],
      message: 'duplicate item id "a"; each item needs its own id',
    });
  });

  it('starts over for a new task: nothing from the last task counts as open or done', async () => {
    const plan = new RunPlan();
    await update(plan, [item('a', 'in_progress')]);
    plan.reset();
    expect(plan.items).toEqual([]);
    expect((await update(plan, [item('a', 'done')])).facts).toEqual({ openItems: 0, progressed: false });
  });
});
