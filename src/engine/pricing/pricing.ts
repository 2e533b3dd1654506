/** Cost of a call from its usage and the per-model price table (USD per million tokens). */
import type { CallUsage } from '../../../machines/types.js';
import type { ModelPrice } from '../../contracts/model.js';
import type { ModelUsage } from '../../contracts/model.js';

/**
 * The price of a model id: its exact entry; else, for an id `provider:model` (what `aiSdkModel` names its
 * models, `openai.chat:gpt-4.1-mini`), the entry of the model id after the first colon, so the built-in
 * table and prices keyed by bare model ids apply. An entry under the whole id wins.
 * @example
 * priceOf(DEFAULT_PRICES, 'openai.responses:gpt-4.1-mini') // DEFAULT_PRICES['gpt-4.1-mini']
 */
export function priceOf(prices: Readonly<Record<string, ModelPrice>>, modelId: string): ModelPrice | undefined {
  // Own properties only: a model id like `toString` must not find Object.prototype's.
  // Exact ids only: a dated snapshot may be priced unlike its alias (gpt-4o-2024-05-13 is).
  if (Object.hasOwn(prices, modelId)) return prices[modelId];
  const colon = modelId.indexOf(':');
  if (colon <= 0) return undefined;
  const bare = modelId.slice(colon + 1);
  return Object.hasOwn(prices, bare) ? prices[bare] : undefined;
}

/** Cached input tokens are part of `inputTokens`, priced at the cached rate when the table has one. */
export function costOf(price: ModelPrice | undefined, usage: ModelUsage): number {
  if (price === undefined) return 0;
  const cached = Math.min(usage.cachedInputTokens ?? 0, usage.inputTokens);
  const cachedRate = price.cachedInputPerMillion ?? price.inputPerMillion;
  return (
    ((usage.inputTokens - cached) * price.inputPerMillion +
      cached * cachedRate +
      usage.outputTokens * price.outputPerMillion) /
    1_000_000
  );
}

/** Usage of several models summed, each priced by its own model id. */
export function pricedTotal(
  prices: Readonly<Record<string, ModelPrice>>,
  byModel: Iterable<readonly [string, ModelUsage]>,
): CallUsage {
  let inputTokens = 0,
    outputTokens = 0,
    costUsd = 0;
  for (const [modelId, usage] of byModel) {
    inputTokens += usage.inputTokens;
    outputTokens += usage.outputTokens;
    costUsd += costOf(priceOf(prices, modelId), usage);
  }
  return { inputTokens, outputTokens, costUsd };
}

/**
 * An amount of money for a message: rounded to a millionth of a dollar (a sum of prices leaves float
 * residue such as 6.9e-18), without trailing zeros.
 * @example
 * formatUsd(0.015 - 0.005 - 0.01); // '$0'
 * formatUsd(0.0123456789); // '$0.012346'
 */
export function formatUsd(amount: number): string {
  if (!Number.isFinite(amount)) return `$${amount}`;
  const rounded = Math.round(amount * 1e6) / 1e6;
  return `$${(Object.is(rounded, -0) ? 0 : rounded).toFixed(6).replace(/\.?0+$/, '')}`;
}
