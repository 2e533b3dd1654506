/** What `run-start` records about the run's setup: the prompt version and the limits. */
import type { LoopLimits } from '../../../machines/types.js';
import type { ToolSpec } from '../../contracts/model.js';
import type { TracedLimits } from '../../contracts/trace-schema.js';
import { digest64 } from '../progress/digest.js';

/**
 * A short hash of the instructions and the tool specs offered: two runs with the same prompt version
 * started from the same prompt setup, so a change in behaviour between them is not the prompt's.
 * @example
 * promptVersion('Be brief.', [lookup.spec]) // e.g. 'a3f9c2e1b0d4e5f6'
 */
export function promptVersion(instructions: string, tools: readonly ToolSpec[]): string {
  return digest64(JSON.stringify({ instructions, tools }));
}

/** The limits with every switched-off (`Infinity`) one as null, which JSON can carry. */
export function tracedLimits(limits: LoopLimits): TracedLimits {
  const finite = (value: number) => (Number.isFinite(value) ? value : null);
  return {
    maxSteps: finite(limits.maxSteps),
    maxStepsPerTask: finite(limits.maxStepsPerTask),
    maxRetries: finite(limits.maxRetries),
    maxTransportAttempts: finite(limits.maxTransportAttempts),
    maxTransportRetries: finite(limits.maxTransportRetries),
    deadlineMs: finite(limits.deadlineMs),
    maxInputTokens: finite(limits.maxInputTokens),
    maxOutputTokens: finite(limits.maxOutputTokens),
    maxCostUsd: finite(limits.maxCostUsd),
    maxParallelTools: finite(limits.maxParallelTools),
    maxToolCalls: finite(limits.maxToolCalls),
    maxToolCallsPerReply: finite(limits.maxToolCallsPerReply),
    maxToolResultBytes: finite(limits.maxToolResultBytes),
    maxArgumentRepairs: finite(limits.maxArgumentRepairs),
    modelCallTimeoutMs: finite(limits.modelCallTimeoutMs),
    evaluatorTimeoutMs: finite(limits.evaluatorTimeoutMs),
  };
}
