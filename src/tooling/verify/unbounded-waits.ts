/**
 * What can still keep a run waiting without end when its deadline is off. The state graph having no
 * cycle proves a run takes finitely many steps; only time bounds each step. Model calls
 * (`limits.modelCallTimeoutMs`) and tool calls (each tool's `timeoutMs`) always have a timeout, backoffs are
 * capped; what is left is listed here, each with the option that bounds it.
 */
import type { LoopLimits, StopReason } from '../../../machines/types.js';
import type { ResolvedConfig } from '../../internal.js';
import type { Evaluator } from '../../index.js';

/** The evaluators each task runs: its own, else the loop's. */
function evaluatorsOf(config: ResolvedConfig): Evaluator[] {
  const lists =
    config.tasks === null ? [config.evaluate] : config.tasks.map((task) => task.evaluate ?? config.evaluate);
  return lists
    .flatMap((list) => (Array.isArray(list) ? list : [list]))
    .filter((evaluator): evaluator is Evaluator => evaluator !== undefined);
}

/**
 * The waits nothing bounds in time, in words naming the option that would; empty when the deadline is finite,
 * since the deadline ends every wait of a run (a model call, a tool, an evaluator, a store-wide pause).
 * @example
 * unboundedWaits(config, { ...config.limits, deadlineMs: Infinity, evaluatorTimeoutMs: Infinity }, ['completed'])
 * // ['evaluator "ticket-service" may take as long as it likes: limits.evaluatorTimeoutMs is Infinity', ...]
 */
export function unboundedWaits(
  config: ResolvedConfig,
  limits: LoopLimits,
  stopReasons: readonly StopReason[],
): string[] {
  if (Number.isFinite(limits.deadlineMs)) return [];
  const waits: string[] = [];
  if (!Number.isFinite(limits.evaluatorTimeoutMs)) {
    // Judges are bounded per call by modelCallTimeoutMs, whatever evaluatorTimeoutMs says.
    const names = [
      ...new Set(
        evaluatorsOf(config)
          .filter((evaluator) => evaluator.kind !== 'judge')
          .map((evaluator) => `"${evaluator.name}"`),
      ),
    ];
    if (names.length > 0)
      waits.push(
        `evaluator${names.length > 1 ? 's' : ''} ${names.join(', ')} may take as long as ${names.length > 1 ? 'they like' : 'it likes'}: limits.evaluatorTimeoutMs is Infinity`,
      );
  }
  if (config.store !== undefined) {
    waits.push(
      'a store-wide pause holds the run before its next step until it is lifted, and each store call is awaited as long as the store takes',
    );
  }
  if (stopReasons.includes('needs_human')) {
    const reviews = evaluatorsOf(config).some((evaluator) => evaluator.mayRequestReview === true);
    const expiry = config.durable.approvalExpiresAfterMs;
    waits.push(
      `a run that stops with needs_human waits for a person's decision before loop.resume continues it${expiry === null ? ' (durable.approvalExpiresAfterMs, unset, would make a late approval fail)' : ` (an approval given more than durable.approvalExpiresAfterMs, ${expiry} ms, later fails)`}${reviews ? '; a review of an output never expires' : ''}`,
    );
  }
  return waits;
}
