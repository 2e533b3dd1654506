/**
 * Config resolution and run-input validation as plain functions. test/integration/bad-input.test.ts
 * covers the createLoop error messages end to end; this file covers defaults, merging and issue paths, and
 * config-input.test.ts unusual or bad input.
 */
import { z } from 'zod';
import { describe, expect, it } from 'vitest';
import { resolveConfig, validateRunInput } from './config.js';
import { DEFAULT_BACKOFF, DEFAULT_LIMITS, DEFAULT_NO_PROGRESS, DEFAULT_PRICES } from '../constants.js';
import { LoopConfigError } from '../../contracts/errors.js';
import { configError } from '../../../test/support/config-error.js';
import { evaluators } from '../evaluators/index.js';
import { systemClock } from '../runtime/clock.js';
import { reply, scriptedModel } from '../../testing/index.js';
import { virtualClock } from '../../testing/virtual-clock.js';
import { defineTool } from '../tools/index.js';

const model = scriptedModel([reply('unused')]);
const lookup = defineTool({
  name: 'lookup',
  description: 'Look a record up.',
  input: z.object({ id: z.string() }),
  access: 'read',
  execute: ({ id }) => id,
});
const search = defineTool({
  name: 'search',
  description: 'Search records.',
  input: z.object({ query: z.string() }),
  access: 'read',
  execute: () => [],
});
const badKind = { name: 'mine', kind: 'bogus', evaluate: () => ({ passed: true, reason: '', parsed: null }) };

/** The trace options when none are given: in memory, OpenTelemetry through the global tracer, no file, no prompts. */
const TRACE_DEFAULTS = { inMemory: true, onEvent: undefined, file: undefined, prompts: false, otel: {} };

describe('resolveConfig defaults', () => {
  it('fills every option from the constants module when only a model is given', () => {
    const resolved = resolveConfig({ model });
    expect(resolved.model).toBe(model);
    expect(resolved.instructions).toBe('');
    expect(resolved.tools.size).toBe(0);
    expect(resolved.evaluate).toEqual([]);
    expect(resolved.tasks).toBeNull();
    expect(resolved.limits).toEqual({
      ...DEFAULT_LIMITS,
      maxStepsPerTask: DEFAULT_LIMITS.maxSteps,
      maxToolCalls: DEFAULT_LIMITS.maxSteps * DEFAULT_LIMITS.maxToolCallsPerReply,
    });
    expect(resolved.noProgress).toEqual(DEFAULT_NO_PROGRESS);
    expect(resolved.policy).toBeUndefined();
    expect(resolved.prices).toEqual(DEFAULT_PRICES);
    expect(resolved.trace).toEqual(TRACE_DEFAULTS);
    expect(resolved.backoff).toEqual(DEFAULT_BACKOFF);
    expect(resolved.clock).toBe(systemClock);
    expect(resolved.random).toBe(Math.random);
  });

  it('generates a distinct run id on every call by default', () => {
    const { generateRunId } = resolveConfig({ model });
    const ids = new Set(Array.from({ length: 20 }, () => generateRunId()));
    expect(ids.size).toBe(20);
    for (const id of ids) expect(id).toMatch(/^run_[0-9a-z]+_[0-9a-z]+$/);
  });

  it('hands out fresh limits objects, so resolving never exposes the frozen defaults', () => {
    const first = resolveConfig({ model });
    const second = resolveConfig({ model });
    expect(first.limits).not.toBe(DEFAULT_LIMITS);
    expect(first.limits).not.toBe(second.limits);
    expect(Object.isFrozen(first.limits)).toBe(false);
  });

  it('passes injected model, clock, random and run id generator through untouched', () => {
    const clock = virtualClock();
    const random = () => 0.5;
    const generateRunId = () => 'fixed';
    const resolved = resolveConfig({ model, clock, random, generateRunId, instructions: 'Be brief.' });
    expect(resolved.clock).toBe(clock);
    expect(resolved.random).toBe(random);
    expect(resolved.generateRunId).toBe(generateRunId);
    expect(resolved.instructions).toBe('Be brief.');
  });
});

describe('resolveConfig merging', () => {
  it('merges partial limits over the defaults, keeping the rest', () => {
    const { limits } = resolveConfig({ model, limits: { maxSteps: 3, maxCostUsd: 0.05 } });
    expect(limits).toEqual({
      ...DEFAULT_LIMITS,
      maxSteps: 3,
      maxStepsPerTask: 3,
      maxToolCalls: 3 * DEFAULT_LIMITS.maxToolCallsPerReply,
      maxCostUsd: 0.05,
    });
    expect(limits.maxSteps).not.toBe(DEFAULT_LIMITS.maxSteps);
  });

  it('merges partial no-progress thresholds over the defaults', () => {
    const { noProgress } = resolveConfig({ model, noProgress: { repeatedToolCall: 5, planStall: 2 } });
    expect(noProgress).toEqual({ ...DEFAULT_NO_PROGRESS, repeatedToolCall: 5, planStall: 2 });
  });

  it('merges a partial retry over the default backoff', () => {
    expect(resolveConfig({ model, retry: { baseMs: 10 } }).backoff).toEqual({ ...DEFAULT_BACKOFF, baseMs: 10 });
    expect(resolveConfig({ model, retry: { maxMs: 99 } }).backoff).toEqual({ ...DEFAULT_BACKOFF, maxMs: 99 });
    expect(resolveConfig({ model, retry: { maxRetryAfterMs: 5_000 } }).backoff).toEqual({
      ...DEFAULT_BACKOFF,
      maxRetryAfterMs: 5_000,
    });
  });

  it('adds and overrides prices over DEFAULT_PRICES without changing the defaults', () => {
    const before = structuredClone(DEFAULT_PRICES);
    const { prices } = resolveConfig({
      model,
      prices: {
        'my-model': { inputPerMillion: 1, outputPerMillion: 3 },
        'gpt-4.1': { inputPerMillion: 0, outputPerMillion: 0 },
      },
    });
    expect(prices['my-model']).toEqual({ inputPerMillion: 1, outputPerMillion: 3 });
    expect(prices['gpt-4.1']).toEqual({ inputPerMillion: 0, outputPerMillion: 0 });
    expect(prices['gpt-4o']).toEqual(DEFAULT_PRICES['gpt-4o']);
    expect(Object.keys(prices).sort()).toEqual([...Object.keys(DEFAULT_PRICES), 'my-model'].sort());
    expect(DEFAULT_PRICES).toEqual(before);
  });

  it('turns trace: false into no in-memory trace and no sink', () => {
    expect(resolveConfig({ model, trace: false }).trace).toEqual({
      inMemory: false,
      onEvent: undefined,
      file: undefined,
      prompts: false,
      otel: false,
    });
  });

  it('keeps the in-memory trace on unless told otherwise, and passes the sink through', () => {
    const onEvent = () => undefined;
    expect(resolveConfig({ model, trace: { onEvent } }).trace).toEqual({ ...TRACE_DEFAULTS, onEvent });
    expect(resolveConfig({ model, trace: { inMemory: false, onEvent } }).trace).toEqual({
      ...TRACE_DEFAULTS,
      inMemory: false,
      onEvent,
    });
    expect(resolveConfig({ model, trace: {} }).trace).toEqual(TRACE_DEFAULTS);
  });

  it('indexes tools by name, in the given order, as the very tool objects', () => {
    const { tools } = resolveConfig({ model, tools: [search, lookup] });
    expect([...tools.keys()]).toEqual(['search', 'lookup']);
    expect(tools.get('lookup')).toBe(lookup);
    expect(tools.get('search')).toBe(search);
    expect(tools.get('missing')).toBeUndefined();
  });

  it('keeps tasks with their prompt functions, evaluators and policies', () => {
    const prompt = () => 'Draft it';
    const schema = evaluators.schema(z.object({ summary: z.string() }));
    const { tasks } = resolveConfig({
      model,
      tools: [lookup],
      tasks: [
        { id: 'classify', prompt: 'Classify', requires: ['lookup'] },
        { id: 'draft', prompt, evaluate: [schema], onFailure: 'continue' },
      ],
    });
    expect(tasks).toHaveLength(2);
    expect(tasks?.[0]).toEqual({ id: 'classify', prompt: 'Classify', requires: ['lookup'] });
    expect(tasks?.[1]?.prompt).toBe(prompt);
    expect(tasks?.[1]?.evaluate).toEqual([schema]);
    expect(tasks?.[1]?.onFailure).toBe('continue');
  });

  it('keeps the loop evaluators in order as the very evaluator objects', () => {
    const json = evaluators.json();
    const rule = evaluators.rule(() => true, 'always');
    const { evaluate } = resolveConfig({ model, evaluate: [json, rule] });
    expect(evaluate).toHaveLength(2);
    expect(evaluate[0]).toBe(json);
    expect(evaluate[1]).toBe(rule);
  });
});

describe('resolveConfig evaluator issues', () => {
  it('prefixes issues of the loop evaluators with evaluate', () => {
    const error = configError(() => resolveConfig({ model, evaluate: [evaluators.json(), badKind] }));
    expect(error.issues).toEqual([{ path: 'evaluate[1].kind', message: "expected 'format', 'rule' or 'judge'" }]);
  });

  it('prefixes issues of a task evaluator with its task index', () => {
    const tasks = [
      { id: 'first', prompt: 'One' },
      { id: 'second', prompt: 'Two', evaluate: [evaluators.json(), { ...badKind, name: '' }] },
    ];
    const error = configError(() => resolveConfig({ model, tasks }));
    expect(error.issues).toEqual([
      { path: 'tasks[1].evaluate[1].name', message: 'expected a non-empty string' },
      { path: 'tasks[1].evaluate[1].kind', message: "expected 'format', 'rule' or 'judge'" },
    ]);
  });

  it('reports issues of the loop and of every task in one error, loop first', () => {
    const tasks = [
      { id: 'a', prompt: 'A', evaluate: [badKind] },
      { id: 'b', prompt: 'B', evaluate: [evaluators.json(), badKind] },
    ];
    const error = configError(() => resolveConfig({ model, evaluate: [badKind], tasks }));
    expect(error.issues.map((issue) => issue.path)).toEqual([
      'evaluate[0].kind',
      'tasks[0].evaluate[0].kind',
      'tasks[1].evaluate[1].kind',
    ]);
  });

  it('carries no zod cause for evaluator issues, which are not schema errors', () => {
    expect(configError(() => resolveConfig({ model, evaluate: [badKind] })).cause).toBeUndefined();
  });
});

describe('LoopConfigError from resolveConfig', () => {
  it('has the stable code, its own name and every issue in its message', () => {
    const error = configError(() => resolveConfig({ model, limits: { maxSteps: 0, maxRetries: -1 } }));
    expect(error).toMatchObject({ code: 'invalid_config', name: 'LoopConfigError' });
    expect(error.issues.map((issue) => issue.path).sort()).toEqual(['limits.maxRetries', 'limits.maxSteps']);
    expect(error.message.split('\n')).toEqual([
      'Invalid loop config:',
      ...error.issues.map((issue) => `  - ${issue.path}: ${issue.message}`),
    ]);
    expect(error.cause).toBeInstanceOf(z.ZodError);
  });

  it('names the root when the config is not an object at all', () => {
    for (const input of [null, undefined, 'model', 42]) {
      const error = configError(() => resolveConfig(input));
      expect(error.issues).toEqual([{ path: '', message: expect.stringMatching(/expected object/) }]);
      expect(error.message).toContain('  - (root): ');
    }
  });

  it('quotes record keys that are not identifiers in the path', () => {
    const error = configError(() =>
      resolveConfig({ model, prices: { 'gpt-4.1': { inputPerMillion: -1, outputPerMillion: 1 } } }),
    );
    expect(error.issues).toEqual([
      { path: 'prices["gpt-4.1"].inputPerMillion', message: expect.stringMatching(/too small/i) },
    ]);
  });

  it('suggests the closest key for a typo inside a task, the trace options and retry', () => {
    const inTask = configError(() => resolveConfig({ model, tasks: [{ id: 'a', prompt: 'A', onFailur: 'stop' }] }));
    expect(inTask.issues).toEqual([
      { path: 'tasks[0].onFailur', message: 'unknown option; did you mean "onFailure"?' },
    ]);
    const inTrace = configError(() => resolveConfig({ model, trace: { inMemroy: true } }));
    expect(inTrace.issues).toEqual([{ path: 'trace.inMemroy', message: 'unknown option; did you mean "inMemory"?' }]);
    const inRetry = configError(() => resolveConfig({ model, retry: { base: 10 } }));
    expect(inRetry.issues).toEqual([{ path: 'retry.base', message: 'unknown option; did you mean "baseMs"?' }]);
  });

  it('refuses an empty task list rather than silently running the single-task loop', () => {
    const error = configError(() => resolveConfig({ model, tasks: [] }));
    expect(error.issues).toEqual([{ path: 'tasks', message: expect.stringMatching(/>=1/) }]);
  });
});

describe('an explicit cost budget needs a price for the model', () => {
  const unpriced = scriptedModel([reply('unused')], { id: 'my-local-model' });

  it('refuses maxCostUsd set on purpose for a model the table does not price, naming the field and the fix', () => {
    const error = (() => {
      try {
        resolveConfig({ model: unpriced, limits: { maxCostUsd: 0.5 } });
      } catch (caught) {
        return caught;
      }
      return null;
    })();
    expect(error).toBeInstanceOf(LoopConfigError);
    expect((error as LoopConfigError).issues).toEqual([
      {
        path: 'limits.maxCostUsd',
        message:
          'the model "my-local-model" has no price, so its spend would count as $0 against this budget; add it to `prices` (USD per million tokens) or set maxCostUsd: Infinity',
      },
    ]);
  });

  it('accepts it once `prices` names the model, and without an explicit budget (the run only warns)', () => {
    expect(() =>
      resolveConfig({
        model: unpriced,
        limits: { maxCostUsd: 0.5 },
        prices: { 'my-local-model': { inputPerMillion: 0, outputPerMillion: 0 } },
      }),
    ).not.toThrow();
    expect(() => resolveConfig({ model: unpriced })).not.toThrow();
    expect(() => resolveConfig({ model: unpriced, limits: { maxCostUsd: undefined } })).not.toThrow();
    expect(() => resolveConfig({ model: unpriced, limits: { maxCostUsd: Infinity } })).not.toThrow();
  });

  it('accepts a cached-input rate in `prices`', () => {
    const { prices } = resolveConfig({
      model: unpriced,
      prices: { 'my-local-model': { inputPerMillion: 1, cachedInputPerMillion: 0.1, outputPerMillion: 2 } },
    });
    expect(prices['my-local-model']).toEqual({ inputPerMillion: 1, cachedInputPerMillion: 0.1, outputPerMillion: 2 });
  });
});

describe('unknown-key hints', () => {
  it('suggests run input names for run input, not createLoop options', () => {
    try {
      validateRunInput({ goal: 'g', goals: 'x' });
      throw new Error('accepted');
    } catch (error) {
      expect((error as LoopConfigError).issues).toEqual([
        { path: 'goals', message: 'unknown option; did you mean "goal"?' },
      ]);
    }
  });

  it('suggests price field names inside a prices entry', () => {
    try {
      resolveConfig({
        model: scriptedModel([reply('x')]),
        prices: { mine: { inputPerMilion: 1, outputPerMillion: 2 } },
      });
      throw new Error('accepted');
    } catch (error) {
      expect((error as LoopConfigError).issues).toContainEqual({
        path: 'prices.mine.inputPerMilion',
        message: 'unknown option; did you mean "inputPerMillion"?',
      });
    }
  });
});

describe('deadlineMs beyond what a timer can hold', () => {
  it('is refused with the reason, instead of a timer that fires at once', () => {
    try {
      resolveConfig({ model: scriptedModel([reply('x')]), limits: { deadlineMs: 30 * 24 * 60 * 60 * 1000 } });
      throw new Error('accepted');
    } catch (error) {
      expect((error as LoopConfigError).issues).toEqual([
        {
          path: 'limits.deadlineMs',
          message:
            'must be at most 2147483647 ms (about 24.8 days), the longest timer Node supports (or Infinity for no limit)',
        },
      ]);
    }
    expect(
      resolveConfig({ model: scriptedModel([reply('x')]), limits: { deadlineMs: 2_147_483_647 } }).limits.deadlineMs,
    ).toBe(2_147_483_647);
  });
});
