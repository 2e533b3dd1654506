/**
 * The optional built-in plan tool (`createLoop({ plan: true })`). The model keeps a list of items
 * with statuses and sends the whole list each time it changes it; the loop learns from it whether
 * the plan moves. Only an explicit plan can stall: `noProgress.planStall` decisions without an item
 * completed or removed nudge the model, then stop the run.
 */
import { z } from 'zod';
import type { PlanRoundFacts } from '../../../machines/types.js';
import { defineTool, type Tool } from '../tools/define-tool.js';
import { PLAN_TOOL_DESCRIPTION, planUpdatedAnswer } from '../prompts.js';

/** The plan tool's name as the model sees it. */
export const PLAN_TOOL_NAME = 'update_plan';

const MAX_PLAN_ITEMS = 50;

const planItemSchema = z.object({
  id: z.string().min(1).max(80).describe('A short stable id for the item, e.g. "check-logs"'),
  title: z.string().min(1).max(300).describe('What the item is about'),
  status: z.enum(['pending', 'in_progress', 'done', 'removed']).describe('"removed" drops an item you will not do'),
});

const planInputSchema = z.object({
  items: z
    .array(planItemSchema)
    .min(1)
    .max(MAX_PLAN_ITEMS)
    .describe('The whole plan, every item, in order')
    .superRefine((items, context) => {
      const seen = new Set<string>();
      items.forEach((item, index) => {
        if (seen.has(item.id))
          context.addIssue({
            code: 'custom',
            path: [index, 'id'],
            message: `duplicate item id "${item.id}"; each item needs its own id`,
          });
        seen.add(item.id);
      });
    }),
});

/**
 * One item of the plan as the model last sent it.
 * @example
 * const item: PlanItem = { id: 'check-logs', title: 'Read the gateway logs', status: 'in_progress' };
 */
export type PlanItem = z.output<typeof planItemSchema>;

const isClosed = (status: PlanItem['status']) => status === 'done' || status === 'removed';

/**
 * The plan of one run, and the tool through which the model updates it.
 * @example
 * const plan = new RunPlan();
 * const tools = [...userTools, plan.tool];
 */
export class RunPlan {
  #items: PlanItem[] = [];
  #roundFacts: PlanRoundFacts | null = null;

  readonly tool: Tool = defineTool({
    name: PLAN_TOOL_NAME,
    description: PLAN_TOOL_DESCRIPTION,
    input: planInputSchema,
    access: 'read',
    idempotent: true,
    execute: ({ items }) => this.#update(items),
  });

  /** The plan as last sent. */
  get items(): readonly PlanItem[] {
    return this.#items;
  }

  /** A new task starts without a plan: its stall count starts over, and so does what counts as done. */
  reset(): void {
    this.#items = [];
    this.#roundFacts = null;
  }

  /** The items as last sent, as plain data for a durable run's journal. */
  persistedItems(): PlanItem[] {
    return this.#items.map((item) => ({ ...item }));
  }

  /** Puts back what `persistedItems` returned when a durable run is restored. */
  restoreItems(items: readonly PlanItem[]): void {
    this.#items = items.map((item) => ({ ...item }));
    this.#roundFacts = null;
  }

  /** What the updates since the last call did to the plan; null when it was not updated. Resets. */
  takeRoundFacts(): PlanRoundFacts | null {
    const facts = this.#roundFacts;
    this.#roundFacts = null;
    return facts;
  }

  #update(items: readonly PlanItem[]): string {
    // Only an item that was open in the plan before moves it: one that arrives already done is not work done.
    const openBefore = new Set(this.#items.filter((item) => !isClosed(item.status)).map((item) => item.id));
    const ids = new Set(items.map((item) => item.id));
    // An open item that disappears from the list was dropped: that moves the plan as much as "removed".
    const dropped = [...openBefore].some((id) => !ids.has(id));
    const closedNow = items.some((item) => isClosed(item.status) && openBefore.has(item.id));
    this.#items = items.map((item) => ({ ...item }));
    const openItems = items.filter((item) => !isClosed(item.status)).length;
    const progressed = dropped || closedNow || (this.#roundFacts?.progressed ?? false);
    this.#roundFacts = { openItems, progressed };
    return planUpdatedAnswer(items);
  }
}
