/**
 * The examples' and the CLI's plain-text summary of a run. Kept apart from the examples so the CLI
 * can import it without building a loop; it imports types only.
 */
import type { RunResult } from '../src/index.js';

/**
 * A run's status, stop reason, output, steps, usage and warnings, one field a line.
 * @example
 * console.log(formatResult(await loop.run({ goal: 'What is the status of order O-101?' })));
 */
export function formatResult(result: RunResult): string {
  const { usage } = result;
  return [
    `status:      ${result.status}`,
    `stop reason: ${result.stopReason} (${result.detail})`,
    `output:      ${JSON.stringify(result.output)}`,
    // A run that stopped early may have text that did not parse: show it rather than a bare null.
    ...(result.output === null && result.rawOutput !== null ? [`raw output:  ${JSON.stringify(result.rawOutput)}`] : []),
    `steps:       ${result.steps}`,
    `usage:       ${usage.inputTokens} input + ${usage.outputTokens} output tokens, $${usage.costUsd.toFixed(6)}, ${usage.modelCalls} model call(s), ${usage.toolCalls} tool call(s)`,
    `warnings:    ${result.warnings.length === 0 ? 'none' : result.warnings.join('; ')}`,
  ].join('\n');
}
