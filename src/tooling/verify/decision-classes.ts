/**
 * The decisions a loop's model can make, as `verify` explores them: one class per kind of reply its tools and
 * their verdicts allow (a final reply, an empty one, valid calls, invalid arguments, a denied tool, one waiting
 * for approval, …), and the tools it treats as one.
 */
import type { ModelDecision } from '../../../machines/types.js';
import type { VerifyModel } from './verify-model.js';

/** What a reply's digest stands for: replies of one family repeat or change within it. */
export type Family = 'text' | 'empty' | 'calls' | 'invalid';

const decision = (overrides: Partial<Extract<ModelDecision, { kind: 'tool_calls' }>>): ModelDecision => ({
  kind: 'tool_calls',
  calls: 1,
  invalidCalls: 0,
  parseError: null,
  deniedCalls: 0,
  approvalCalls: 0,
  unavailableCalls: 0,
  refusedCalls: 0,
  blockedTool: null,
  ...overrides,
});

export interface DecisionClass {
  label: string;
  decision: ModelDecision;
  family: Family;
  canRepeat: boolean;
  /** Stops the run (denied, waiting for approval, circuit open) before the machine checks a spend budget. */
  stopsBeforeSpendCheck?: boolean;
  destructiveTool?: string;
}

/** The decisions this loop's model can make, given its tools and their verdicts. */
export function decisionClasses(model: VerifyModel): DecisionClass[] {
  const classes: DecisionClass[] = [
    { label: 'final reply', decision: { kind: 'final' }, family: 'text', canRepeat: true },
    {
      label: 'empty reply',
      decision: { kind: 'unparseable', parseError: 'empty_reply' },
      family: 'empty',
      canRepeat: true,
    },
    // Malformed arguments or an unknown tool: possible even for a loop without tools.
    {
      label: 'invalid tool call',
      decision: decision({ invalidCalls: 1, parseError: 'invalid_arguments' }),
      family: 'invalid',
      canRepeat: false,
    },
  ];
  const verdicts = (verdict: string) => model.tools.filter((tool) => tool.verdicts.includes(verdict as never));
  const allowed = verdicts('allow');
  const safe = allowed.filter((tool) => tool.access !== 'destructive');
  if (safe.length > 0)
    classes.push({
      label: `tool calls (${safe.map((tool) => tool.name).join(', ')})`,
      decision: decision({}),
      family: 'calls',
      canRepeat: true,
    });
  for (const tool of allowed.filter((candidate) => candidate.access === 'destructive')) {
    classes.push({
      label: `tool call ${tool.name} (destructive, allowed without approval)`,
      decision: decision({}),
      family: 'calls',
      canRepeat: true,
      destructiveTool: tool.name,
    });
  }
  const denied = verdicts('deny')[0];
  if (denied !== undefined) {
    classes.push(
      model.onDeny === 'stop'
        ? {
            label: `tool call ${denied.name} (denied)`,
            decision: decision({ deniedCalls: 1, blockedTool: denied.name }),
            family: 'calls',
            canRepeat: false,
            stopsBeforeSpendCheck: true,
          }
        : {
            label: `tool call ${denied.name} (denied, told to the model)`,
            decision: decision({ calls: 0, refusedCalls: 1 }),
            family: 'calls',
            canRepeat: false,
          },
    );
  }
  const approval = verdicts('needs_approval')[0];
  if (approval !== undefined) {
    classes.push({
      label: `tool call ${approval.name} (needs approval)`,
      decision: decision({ approvalCalls: 1, blockedTool: approval.name }),
      family: 'calls',
      canRepeat: false,
      stopsBeforeSpendCheck: true,
    });
  }
  const first = model.tools[0];
  if (first !== undefined) {
    classes.push({
      label: `tool call ${first.name} (circuit open)`,
      decision: decision({ unavailableCalls: 1, blockedTool: first.name }),
      family: 'calls',
      canRepeat: false,
      stopsBeforeSpendCheck: true,
    });
  }
  return classes;
}

/**
 * Tools the decisions above treat as one, in words for the report. The machine never sees which tool a call
 * names, only the counts of the driver's verdicts, so tools with the same verdict are interchangeable.
 */
export function toolSymmetries(model: VerifyModel): string[] {
  const verdicts = (verdict: string) => model.tools.filter((tool) => tool.verdicts.includes(verdict as never));
  const names = (tools: readonly { name: string }[]) => tools.map((tool) => tool.name).join(', ');
  const safe = verdicts('allow').filter((tool) => tool.access !== 'destructive');
  const symmetries: string[] = [];
  if (safe.length > 1)
    symmetries.push(
      `symmetry: ${safe.length} interchangeable tools (${names(safe)}: allowed, not destructive) explored as one kind of tool call`,
    );
  for (const [verdict, words] of [
    ['deny', 'denied'],
    ['needs_approval', 'waiting for approval'],
  ] as const) {
    const alike = verdicts(verdict);
    if (alike.length > 1)
      symmetries.push(
        `symmetry: ${alike.length} tools ${words} alike (${names(alike)}): ${alike[0]?.name} stands for them`,
      );
  }
  return symmetries;
}
