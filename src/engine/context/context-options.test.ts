/** The `context` option as `createLoop` validates and resolves it. */
import { describe, expect, it } from 'vitest';
import { resolveConfig } from '../config/config.js';
import { DEFAULT_CONTEXT } from '../constants.js';
import { LoopConfigError } from '../../contracts/errors.js';
import { reply, scriptedModel } from '../../testing/index.js';

const model = scriptedModel([reply('unused')]);

function issuesOf(config: unknown): LoopConfigError['issues'] {
  try {
    resolveConfig(config);
  } catch (error) {
    if (error instanceof LoopConfigError) return error.issues;
    throw error;
  }
  throw new Error('expected a LoopConfigError');
}

describe('context option', () => {
  it('defaults to trim, 4 kept turns and no ceiling; undefined fields mean the default', () => {
    expect(resolveConfig({ model }).context).toEqual({
      maxInputTokensPerCall: Infinity,
      strategy: 'trim',
      keepTurns: 4,
    });
    expect(
      resolveConfig({ model, context: { maxInputTokensPerCall: undefined, strategy: undefined, keepTurns: undefined } })
        .context,
    ).toEqual(DEFAULT_CONTEXT);
  });

  it("takes the model's contextWindowTokens as the ceiling unless maxInputTokensPerCall is given", () => {
    const windowed = Object.assign(scriptedModel([]), { contextWindowTokens: 8_000 });
    expect(resolveConfig({ model: windowed }).context.maxInputTokensPerCall).toBe(8_000);
    expect(
      resolveConfig({ model: windowed, context: { maxInputTokensPerCall: 3_000 } }).context.maxInputTokensPerCall,
    ).toBe(3_000);
    expect(
      resolveConfig({ model: windowed, context: { maxInputTokensPerCall: Infinity } }).context.maxInputTokensPerCall,
    ).toBe(Infinity);
  });

  it.each([
    [{ maxInputTokensPerCall: 0 }, 'context.maxInputTokensPerCall'],
    [{ maxInputTokensPerCall: 1.5 }, 'context.maxInputTokensPerCall'],
    [{ strategy: 'compress' }, 'context.strategy'],
    [{ keepTurns: 0 }, 'context.keepTurns'],
    [{ keepTurn: 2 }, 'context.keepTurn'],
  ])('refuses %j, naming %s', (context, path) => {
    expect(issuesOf({ model, context }).map((issue) => issue.path)).toEqual([path]);
  });

  it('refuses a model whose contextWindowTokens is not a positive integer', () => {
    expect(issuesOf({ model: Object.assign(scriptedModel([]), { contextWindowTokens: -1 }) })).toEqual([
      {
        path: 'model.contextWindowTokens',
        message: 'expected a positive integer (tokens one request may carry) or no value',
      },
    ]);
  });
});
