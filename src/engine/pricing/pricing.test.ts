import { describe, expect, it } from 'vitest';
import { DEFAULT_PRICES } from '../constants.js';
import type { ModelPrice } from '../../contracts/model.js';
import { OPENAI_PRICES } from './openai-prices.js';
import { costOf, formatUsd, priceOf } from './pricing.js';

const price: ModelPrice = { inputPerMillion: 2, outputPerMillion: 8 };

describe('costOf', () => {
  it('is 0 without a price, however many tokens were used', () => {
    expect(costOf(undefined, { inputTokens: 1_000_000, outputTokens: 1_000_000 })).toBe(0);
  });

  it('charges input and output tokens at their own per-million rates', () => {
    expect(costOf(price, { inputTokens: 1_000_000, outputTokens: 0 })).toBe(2);
    expect(costOf(price, { inputTokens: 0, outputTokens: 1_000_000 })).toBe(8);
    expect(costOf(price, { inputTokens: 500_000, outputTokens: 250_000 })).toBe(3);
  });

  it('prices small calls in fractions of a dollar', () => {
    expect(costOf(price, { inputTokens: 180, outputTokens: 22 })).toBeCloseTo((180 * 2 + 22 * 8) / 1_000_000, 15);
    expect(costOf({ inputPerMillion: 0.4, outputPerMillion: 1.6 }, { inputTokens: 1, outputTokens: 1 })).toBeCloseTo(
      0.000002,
      15,
    );
  });

  it('is 0 for no tokens and for a free model', () => {
    expect(costOf(price, { inputTokens: 0, outputTokens: 0 })).toBe(0);
    expect(costOf({ inputPerMillion: 0, outputPerMillion: 0 }, { inputTokens: 10_000, outputTokens: 10_000 })).toBe(0);
  });
});

describe('costOf with cached input', () => {
  const cachedPrice: ModelPrice = { inputPerMillion: 2, cachedInputPerMillion: 0.5, outputPerMillion: 8 };

  it('charges the cached part of the input at the cached rate', () => {
    expect(costOf(cachedPrice, { inputTokens: 1_000_000, outputTokens: 0, cachedInputTokens: 400_000 })).toBeCloseTo(
      600_000 * 2e-6 + 400_000 * 0.5e-6,
      12,
    );
  });

  it('charges cached input at the input rate when the price has no cached rate', () => {
    expect(costOf(price, { inputTokens: 1_000_000, outputTokens: 0, cachedInputTokens: 400_000 })).toBe(2);
  });

  it('never counts more cached tokens than input tokens, nor prices reasoning tokens twice', () => {
    expect(costOf(cachedPrice, { inputTokens: 100, outputTokens: 0, cachedInputTokens: 5_000 })).toBeCloseTo(
      100 * 0.5e-6,
      15,
    );
    expect(costOf(cachedPrice, { inputTokens: 0, outputTokens: 1_000_000, reasoningTokens: 900_000 })).toBe(8);
  });

  it('has a cached rate for every built-in OpenAI price, below its input rate', () => {
    for (const [id, entry] of Object.entries(OPENAI_PRICES)) {
      expect(DEFAULT_PRICES[id]).toBe(entry);
      expect(entry.cachedInputPerMillion, id).toBeLessThan(entry.inputPerMillion);
    }
  });
});

describe('priceOf', () => {
  it('finds a model by its exact id', () => {
    expect(priceOf(DEFAULT_PRICES, 'gpt-4.1-mini')).toEqual({
      inputPerMillion: 0.4,
      cachedInputPerMillion: 0.1,
      outputPerMillion: 1.6,
    });
    expect(priceOf({ custom: price }, 'custom')).toBe(price);
  });

  it('is undefined for an unknown id, with no prefix or case matching', () => {
    expect(priceOf(DEFAULT_PRICES, 'unknown-model')).toBeUndefined();
    expect(priceOf(DEFAULT_PRICES, 'GPT-4.1')).toBeUndefined();
    expect(priceOf(DEFAULT_PRICES, 'gpt-4.1-2025-04-14')).toBeUndefined();
    expect(priceOf({}, 'gpt-4.1')).toBeUndefined();
  });

  it('prices the offline scripted model so cost budgets work offline', () => {
    const scripted = priceOf(DEFAULT_PRICES, 'scripted');
    expect(scripted).toBeDefined();
    expect(costOf(scripted, { inputTokens: 100, outputTokens: 20 })).toBeGreaterThan(0);
  });
});

describe('priceOf with a provider:model id (aiSdkModel)', () => {
  it('falls back to the model id after the first colon', () => {
    expect(priceOf(DEFAULT_PRICES, 'openai.chat:gpt-4.1-mini')).toBe(DEFAULT_PRICES['gpt-4.1-mini']);
    expect(priceOf({ 'claude-sonnet-4-5': price }, 'anthropic.messages:claude-sonnet-4-5')).toBe(price);
  });

  it('lets an entry under the whole id win over the bare one', () => {
    const whole: ModelPrice = { inputPerMillion: 9, outputPerMillion: 9 };
    expect(priceOf({ 'gpt-4.1': price, 'azure.chat:gpt-4.1': whole }, 'azure.chat:gpt-4.1')).toBe(whole);
  });

  it('still matches nothing by prefix, case or an empty provider', () => {
    expect(priceOf(DEFAULT_PRICES, 'openai.chat:gpt-4.1-2025-04-14')).toBeUndefined();
    expect(priceOf(DEFAULT_PRICES, ':gpt-4.1')).toBeUndefined();
    expect(priceOf({ custom: price }, 'llama3.1:8b')).toBeUndefined();
    expect(priceOf({ ...DEFAULT_PRICES }, 'openai.chat:toString')).toBeUndefined();
  });
});

describe('priceOf with model ids that are Object.prototype names', () => {
  it('finds only own prices, so the cost stays a number', () => {
    const prices = { ...DEFAULT_PRICES };
    for (const id of ['toString', 'constructor', '__proto__', 'hasOwnProperty']) {
      expect(priceOf(prices, id)).toBeUndefined();
      expect(costOf(priceOf(prices, id), { inputTokens: 10, outputTokens: 10 })).toBe(0);
    }
  });
});

describe('formatUsd', () => {
  it('rounds float residue away and keeps a millionth of a dollar', () => {
    expect(formatUsd(0.015 - 0.005 - 0.01)).toBe('$0');
    expect(formatUsd(6.9e-18)).toBe('$0');
    expect(formatUsd(-6.9e-18)).toBe('$0');
    expect(formatUsd(0.0123456789)).toBe('$0.012346');
    expect(formatUsd(0.1 + 0.2)).toBe('$0.3');
    expect(formatUsd(12)).toBe('$12');
  });
});
