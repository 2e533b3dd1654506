/** Cost of a call from its usage and the per-model price table (USD per million tokens). */
import type { CallUsage } from '../../machines/types.js';
import type { ModelPrice } from '../constants.js';
import type { ModelUsage } from '../model/types.js';

/** A snapshot suffix such as `-2025-04-14`: a dated id is priced like its alias unless named itself. */
const DATE_SUFFIX = /-\d{4}-\d{2}-\d{2}$/;

export function priceOf(prices: Readonly<Record<string, ModelPrice>>, modelId: string): ModelPrice | undefined {
  // Own properties only: a model id like `toString` must not find Object.prototype's.
  if (Object.hasOwn(prices, modelId)) return prices[modelId];
  const alias = modelId.replace(DATE_SUFFIX, '');
  return alias !== modelId && Object.hasOwn(prices, alias) ? prices[alias] : undefined;
}

/** Cached input tokens are part of `inputTokens`, priced at the cached rate when the table has one. */
export function costOf(price: ModelPrice | undefined, usage: ModelUsage): number {
  if (price === undefined) return 0;
  const cached = Math.min(usage.cachedInputTokens ?? 0, usage.inputTokens);
  const cachedRate = price.cachedInputPerMillion ?? price.inputPerMillion;
  return ((usage.inputTokens - cached) * price.inputPerMillion + cached * cachedRate + usage.outputTokens * price.outputPerMillion) / 1_000_000;
}

/** Usage of several models summed, each priced by its own model id. */
export function pricedTotal(prices: Readonly<Record<string, ModelPrice>>, byModel: Iterable<readonly [string, ModelUsage]>): CallUsage {
  let inputTokens = 0, outputTokens = 0, costUsd = 0;
  for (const [modelId, usage] of byModel) {
    inputTokens += usage.inputTokens;
    outputTokens += usage.outputTokens;
    costUsd += costOf(priceOf(prices, modelId), usage);
  }
  return { inputTokens, outputTokens, costUsd };
}
