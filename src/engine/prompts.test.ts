import { describe, expect, it } from 'vitest';
import * as prompts from './prompts.js';

/** Each text with sample fillings, in the module's order: the file snapshot is the review surface of every prompt. */
const samples: Record<keyof typeof prompts, () => string> = {
  NUDGES: () =>
    Object.entries(prompts.NUDGES)
      .map(([signal, text]) => `${signal}: ${text}`)
      .join('\n'),
  LONGEST_NUDGE_CHARS: () => String(prompts.LONGEST_NUDGE_CHARS),
  NUDGE_FRAMING_CHARS: () => String(prompts.NUDGE_FRAMING_CHARS),
  nudgeNote: () =>
    [
      prompts.nudgeNote('same_evaluator_reason', { evaluatorReason: 'eta must not be negative', parseError: null }),
      prompts.nudgeNote('same_parse_error', { evaluatorReason: null, parseError: 'invalid_arguments:lookup:key' }),
      prompts.nudgeNote('repeated_tool_call', { evaluatorReason: 'ignored', parseError: 'ignored' }),
    ].join('\n---\n'),
  reflectionNote: () => prompts.reflectionNote('status: expected one of paid, shipped'),
  parseErrorNote: () => prompts.parseErrorNote('empty_reply'),
  HELD_BACK_ANSWER: () => prompts.HELD_BACK_ANSWER,
  NOT_RUN_BESIDE_INVALID_ANSWER: () => prompts.NOT_RUN_BESIDE_INVALID_ANSWER,
  NOT_EXECUTED_ANSWER: () => prompts.NOT_EXECUTED_ANSWER,
  duplicateInReplyAnswer: () => prompts.duplicateInReplyAnswer('lookup'),
  toolCallBudgetSpentAnswer: () => prompts.toolCallBudgetSpentAnswer('lookup', 20),
  overPerReplyAnswer: () => prompts.overPerReplyAnswer('lookup', 4),
  rejectedByPersonAnswer: () => prompts.rejectedByPersonAnswer('refund', 'over the limit'),
  unknownToolNote: () =>
    [prompts.unknownToolNote('lokup', ['lookup', 'refund']), prompts.unknownToolNote('lookup', [])].join('\n---\n'),
  toolUnavailableNote: () => prompts.toolUnavailableNote('lookup', 3),
  policyDeniedNote: () => prompts.policyDeniedNote('refund', 'destructive'),
  needsApprovalNote: () => prompts.needsApprovalNote('refund', 'destructive'),
  malformedArgumentsNote: () => prompts.malformedArgumentsNote('lookup', 'Unexpected end of JSON input'),
  argumentsTooDeepNote: () => prompts.argumentsTooDeepNote('lookup'),
  invalidArgumentsNote: () =>
    prompts.invalidArgumentsNote('lookup', [
      'key: Invalid input: expected string, received number',
      'limit: Too big: expected number to be <=10',
    ]),
  toolFailedAnswer: () => prompts.toolFailedAnswer('lookup', 'backend down'),
  toolNotRunAnswer: () => prompts.toolNotRunAnswer('lookup', 'denied'),
  toolNotRunCancelledAnswer: () => prompts.toolNotRunCancelledAnswer('lookup'),
  toolCancelledAnswer: () =>
    [prompts.toolCancelledAnswer('lookup', true), prompts.toolCancelledAnswer('refund', false)].join('\n---\n'),
  toolTimedOutAnswer: () =>
    (['idempotent', 'not_done', 'unknown'] as const)
      .map((outcome) => prompts.toolTimedOutAnswer('refund', 30_000, outcome))
      .join('\n---\n'),
  unknownOutcomeAnswer: () => prompts.unknownOutcomeAnswer('refund', 'run_1:3:call_0'),
  lostCallAnswer: () => prompts.lostCallAnswer('refund_order', 'the MCP server "node server.js" was killed by SIGKILL'),
  unserialisableResultAnswer: () =>
    prompts.unserialisableResultAnswer('lookup', 'its result could not be serialised (a cycle)'),
  notRunBeforeStopAnswer: () => prompts.notRunBeforeStopAnswer('max_steps'),
  TRUNCATION_MARKER: () => prompts.TRUNCATION_MARKER(16_000, 48_213),
  PLAN_TOOL_DESCRIPTION: () => prompts.PLAN_TOOL_DESCRIPTION,
  planUpdatedAnswer: () =>
    prompts.planUpdatedAnswer([
      { id: 'logs', title: 'Read the gateway logs', status: 'done' },
      { id: 'fix', title: 'Patch the timeout', status: 'in_progress' },
      { id: 'docs', title: 'Update the runbook', status: 'removed' },
    ]),
  workflowTaskPrompt: () =>
    [
      prompts.workflowTaskPrompt('Weekly report', {}, 'classify', 'Classify the tickets.'),
      prompts.workflowTaskPrompt('Weekly report', { classify: { bugs: 3 } }, 'draft', 'Draft the report.'),
    ].join('\n---\n'),
  CONTEXT_SUMMARY_PROMPT: () => prompts.CONTEXT_SUMMARY_PROMPT,
  MEMORY_PREFIX: () => prompts.MEMORY_PREFIX,
  DROPPED_TURNS_NOTE: () => prompts.DROPPED_TURNS_NOTE,
  DROPPED_RESULT_PREFIX: () => prompts.DROPPED_RESULT_PREFIX,
  droppedResultMarker: () => prompts.droppedResultMarker('lookup', 'call_7', '3f2a9c1b0d4e'),
  SUMMARY_CUT_MARKER: () => prompts.SUMMARY_CUT_MARKER,
  JUDGE_INSTRUCTIONS: () => prompts.JUDGE_INSTRUCTIONS,
  JUDGE_SCORED_INSTRUCTIONS: () => prompts.JUDGE_SCORED_INSTRUCTIONS,
  reviewRejectedReason: () => prompts.reviewRejectedReason('the refund amount must match the order total'),
  judgeRequest: () => prompts.judgeRequest('Polite, under 80 words.', 'Your order O-101 has shipped.'),
};

describe('prompts', () => {
  it('every text the model reads, exactly as it reads it (review a change in __snapshots__/prompts.txt)', async () => {
    const rendered = Object.entries(samples)
      .map(([name, render]) => `## ${name}\n${render()}\n`)
      .join('\n');
    await expect(rendered).toMatchFileSnapshot('./__snapshots__/prompts.txt');
  });

  it('renders every export of the module, so no new text escapes the snapshot', () => {
    expect(Object.keys(samples).sort()).toEqual(Object.keys(prompts).sort());
  });

  it('has a nudge for every no-progress signal, each within the longest nudge the estimate allows for', () => {
    const texts = Object.values(prompts.NUDGES);
    expect(Object.keys(prompts.NUDGES).sort()).toEqual([
      'duplicate_observation',
      'plan_stall',
      'repeated_tool_call',
      'same_evaluator_reason',
      'same_parse_error',
      'unchanged_state',
    ]);
    for (const text of texts) expect(text.length).toBeLessThanOrEqual(prompts.LONGEST_NUDGE_CHARS);
    const framed = prompts.nudgeNote('same_parse_error', { evaluatorReason: null, parseError: 'x' });
    expect(framed.length - prompts.NUDGES.same_parse_error.length - 'x'.length).toBeLessThanOrEqual(
      prompts.NUDGE_FRAMING_CHARS,
    );
  });
});
