/**
 * OpenAI list prices in USD per million tokens (input, cached input, output), as published when this
 * table was written. They change: override or extend them with the loop's `prices` option.
 */
import type { ModelPrice } from '../../contracts/model.js';

/**
 * The built-in OpenAI price table, part of `DEFAULT_PRICES`, by exact model id: a dated snapshot
 * (`gpt-4.1-mini-2025-04-14`) needs its own entry in `prices`, since snapshots may be priced differently.
 * @example
 * OPENAI_PRICES['gpt-4.1-mini'] // { inputPerMillion: 0.4, cachedInputPerMillion: 0.1, outputPerMillion: 1.6 }
 */
export const OPENAI_PRICES: Readonly<Record<string, ModelPrice>> = Object.freeze({
  'gpt-5': { inputPerMillion: 1.25, cachedInputPerMillion: 0.125, outputPerMillion: 10 },
  'gpt-5-mini': { inputPerMillion: 0.25, cachedInputPerMillion: 0.025, outputPerMillion: 2 },
  'gpt-5-nano': { inputPerMillion: 0.05, cachedInputPerMillion: 0.005, outputPerMillion: 0.4 },
  'gpt-4.1': { inputPerMillion: 2, cachedInputPerMillion: 0.5, outputPerMillion: 8 },
  'gpt-4.1-mini': { inputPerMillion: 0.4, cachedInputPerMillion: 0.1, outputPerMillion: 1.6 },
  'gpt-4.1-nano': { inputPerMillion: 0.1, cachedInputPerMillion: 0.025, outputPerMillion: 0.4 },
  'gpt-4o': { inputPerMillion: 2.5, cachedInputPerMillion: 1.25, outputPerMillion: 10 },
  'gpt-4o-mini': { inputPerMillion: 0.15, cachedInputPerMillion: 0.075, outputPerMillion: 0.6 },
  o3: { inputPerMillion: 2, cachedInputPerMillion: 0.5, outputPerMillion: 8 },
  'o3-mini': { inputPerMillion: 1.1, cachedInputPerMillion: 0.55, outputPerMillion: 4.4 },
  'o4-mini': { inputPerMillion: 1.1, cachedInputPerMillion: 0.275, outputPerMillion: 4.4 },
  o1: { inputPerMillion: 15, cachedInputPerMillion: 7.5, outputPerMillion: 60 },
});
