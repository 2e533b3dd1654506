/**
 * Worst-case figures implied by a loop's limits and prices, each with the formula it comes from.
 *
 * Budgets are checked before each spend, and the call that crosses one is let stand (the next is refused):
 * a token or cost total can end above its budget by one call, never by two.
 */
import type { LoopLimits } from '../../../machines/types.js';
import type { PathStep } from './graph-analysis.js';
import type { VerifyModel } from './verify-model.js';
import { groupDigits } from './group-digits.js';

export interface WorstCaseFigure {
  /** The figure; null when nothing bounds it. */
  value: number | null;
  /** How it follows from the limits, with the numbers filled in. */
  formula: string;
  /** True when one call beyond `value` may still land (the crossing call). */
  plusOneCall: boolean;
  /** For model and tool calls explored exactly: a run that reaches `value`, event by event. */
  run?: PathStep[];
}

export interface WorstCase {
  modelCalls: WorstCaseFigure;
  toolCalls: WorstCaseFigure;
  inputTokens: WorstCaseFigure;
  outputTokens: WorstCaseFigure;
  costUsd: WorstCaseFigure;
}

const count = (value: number) => (Number.isFinite(value) ? groupDigits(value) : 'Infinity');
const usd = (value: number) => `$${Number(value.toFixed(6))}`;

/**
 * The limit-derived bound on model calls (the exploration's exact figure never exceeds it). The loop's own calls
 * are at most one per decision (`maxSteps`) plus one per task that may fail for good and continue (its call that
 * failed took no step); every call, a judge's and a context summary's too, makes at most `maxTransportAttempts`
 * attempts; and with a finite `maxTransportRetries` the attempts beyond the first are at most that many in all.
 */
export function modelCallBound(
  model: VerifyModel,
  limits: LoopLimits = model.input.limits,
): { value: number; formula: string } {
  const continuing = model.input.tasks.filter((task) => task.onFailure === 'continue').length;
  const judges = Math.max(0, ...model.judgesPerTask);
  const summaries = model.callsPerDecision === 2;
  const attempts = limits.maxTransportAttempts;
  const loopCalls = limits.maxSteps + continuing;
  const judgeCalls = limits.maxSteps * judges;
  // Per call: each attempt of a loop call may be preceded by a summary call with attempts of its own.
  const perCall = attempts * loopCalls * (summaries ? 1 + attempts : 1) + attempts * judgeCalls;
  const calls = [
    `maxSteps ${limits.maxSteps}`,
    ...(continuing > 0 ? [`${continuing} task(s) that may fail and continue`] : []),
  ].join(' + ');
  let formula = `maxTransportAttempts ${attempts} × ${continuing > 0 ? `(${calls})` : calls}`;
  if (summaries) formula = `${formula} × (1 + ${attempts} attempts of a context summary before each)`;
  if (judges > 0)
    formula += ` + maxTransportAttempts ${attempts} × maxSteps ${limits.maxSteps} × ${judges} judge call(s) per evaluation`;
  if (!Number.isFinite(limits.maxTransportRetries)) return { value: perCall, formula };
  // Run-wide: each call once, plus every retry; a summary comes once per attempt of the loop's call.
  const retries = limits.maxTransportRetries;
  const runWide = loopCalls + (summaries ? loopCalls + retries : 0) + judgeCalls + retries;
  if (runWide >= perCall) return { value: perCall, formula: `${formula} (maxTransportRetries ${retries} allows more)` };
  const once = [
    `${calls}`,
    ...(summaries ? [`a summary per attempt (${calls} + maxTransportRetries ${retries})`] : []),
    ...(judges > 0 ? [`maxSteps ${limits.maxSteps} × ${judges} judge call(s)`] : []),
  ];
  return {
    value: runWide,
    formula: `each call once (${once.join(' + ')}) + maxTransportRetries ${retries} retries in all (per call: ${perCall})`,
  };
}

export function toolCallBound(limits: LoopLimits): { value: number; formula: string } {
  const byRounds = (limits.maxSteps - 1) * limits.maxToolCallsPerReply;
  const value = Math.min(limits.maxToolCalls, byRounds);
  return {
    value,
    formula: `min(maxToolCalls ${count(limits.maxToolCalls)}, (maxSteps ${limits.maxSteps} − 1) × maxToolCallsPerReply ${limits.maxToolCallsPerReply}): the decision at the step limit runs no tools`,
  };
}

/** Tokens and cost from the budgets and the price; exact model and tool-call figures come from the exploration. */
export function spendFigures(
  model: VerifyModel,
  limits: LoopLimits,
): Pick<WorstCase, 'inputTokens' | 'outputTokens' | 'costUsd'> {
  const { price } = model;
  const costBudget = Number.isFinite(limits.maxCostUsd) && price !== undefined;
  const viaCost = (perMillion: number | undefined): number | null =>
    costBudget && perMillion !== undefined && perMillion > 0
      ? Math.floor((limits.maxCostUsd * 1_000_000) / perMillion)
      : null;
  const tokens = (budget: number, name: string, perMillion: number | undefined, crossing: string): WorstCaseFigure => {
    if (Number.isFinite(budget))
      return { value: budget, formula: `${name} ${count(budget)} + ${crossing}`, plusOneCall: true };
    const fromCost = viaCost(perMillion);
    if (fromCost !== null)
      return {
        value: fromCost,
        formula: `maxCostUsd ${usd(limits.maxCostUsd)} ÷ $${perMillion} per million (${name} is Infinity) + one call`,
        plusOneCall: true,
      };
    return {
      value: null,
      formula: `unbounded: ${name} is Infinity and no priced cost budget bounds it`,
      plusOneCall: false,
    };
  };
  const inputTokens = tokens(
    limits.maxInputTokens,
    'maxInputTokens',
    price?.inputPerMillion,
    "one call's input above its pre-call estimate",
  );
  const outputTokens = tokens(
    limits.maxOutputTokens,
    'maxOutputTokens',
    price?.outputPerMillion,
    "one call's output (the call that crosses the budget)",
  );
  let costUsd: WorstCaseFigure;
  if (price === undefined) {
    costUsd = {
      value: null,
      formula: `unknown: the model "${model.modelId}" has no price, so its spend counts as $0`,
      plusOneCall: false,
    };
  } else {
    const byTokens =
      inputTokens.value !== null && outputTokens.value !== null
        ? (inputTokens.value * price.inputPerMillion + outputTokens.value * price.outputPerMillion) / 1_000_000
        : null;
    const tokenFormula = `input ${count(inputTokens.value ?? Infinity)} × $${price.inputPerMillion}/M + output ${count(outputTokens.value ?? Infinity)} × $${price.outputPerMillion}/M`;
    if (Number.isFinite(limits.maxCostUsd) && (byTokens === null || limits.maxCostUsd <= byTokens)) {
      costUsd = {
        value: limits.maxCostUsd,
        formula: `maxCostUsd ${usd(limits.maxCostUsd)} + one call's cost (tokens alone allow ${byTokens === null ? 'more' : usd(byTokens)}: ${tokenFormula})`,
        plusOneCall: true,
      };
    } else if (byTokens !== null) {
      costUsd = {
        value: byTokens,
        formula: `${tokenFormula} = ${usd(byTokens)}, plus the crossing calls' share (below maxCostUsd ${usd(limits.maxCostUsd)})`,
        plusOneCall: true,
      };
    } else {
      costUsd = {
        value: null,
        formula: 'unbounded: maxCostUsd is Infinity and a token budget is Infinity too',
        plusOneCall: false,
      };
    }
  }
  return { inputTokens, outputTokens, costUsd };
}
