/**
 * Config resolution with unusual or bad input, as plain functions (config.test.ts has the defaults, merging and
 * issue paths): an explicit undefined, Infinity and NaN, unreadable values, what the input snapshot isolates or
 * keeps by reference, tools the model could never reach, and the loop's name.
 */
import { z } from 'zod';
import { describe, expect, it } from 'vitest';
import { resolveConfig, validateRunInput } from './config.js';
import { DEFAULT_BACKOFF, DEFAULT_LIMITS, DEFAULT_NO_PROGRESS, DEFAULT_PRICES } from '../constants.js';
import { configError } from '../../../test/support/config-error.js';
import { evaluators } from '../evaluators/index.js';
import { systemClock } from '../runtime/clock.js';
import { reply, scriptedModel } from '../../testing/index.js';
import { virtualClock } from '../../testing/virtual-clock.js';
import { defineTool, ToolHealth } from '../tools/index.js';

const model = scriptedModel([reply('unused')]);
const lookup = defineTool({
  name: 'lookup',
  description: 'Look a record up.',
  input: z.object({ id: z.string() }),
  access: 'read',
  execute: ({ id }) => id,
});

/** The trace options when none are given: in memory, OpenTelemetry through the global tracer, no file, no prompts. */
const TRACE_DEFAULTS = { inMemory: true, onEvent: undefined, file: undefined, prompts: false, otel: {} };

describe('an explicit undefined means the default, everywhere', () => {
  const everyKeyUndefined = (defaults: object) =>
    Object.fromEntries(Object.keys(defaults).map((key) => [key, undefined]));

  it('keeps every default limit and no-progress threshold when each is passed as undefined', () => {
    const resolved = resolveConfig({
      model,
      limits: everyKeyUndefined(DEFAULT_LIMITS),
      noProgress: everyKeyUndefined(DEFAULT_NO_PROGRESS),
    });
    expect(resolved.limits).toEqual({
      ...DEFAULT_LIMITS,
      maxStepsPerTask: DEFAULT_LIMITS.maxSteps,
      maxToolCalls: DEFAULT_LIMITS.maxSteps * DEFAULT_LIMITS.maxToolCallsPerReply,
    });
    expect(resolved.noProgress).toEqual(DEFAULT_NO_PROGRESS);
    expect(Object.values(resolved.limits)).not.toContain(undefined);
  });

  it('keeps a set limit beside undefined ones (the `limits: { maxSteps: opts.maxSteps }` pattern)', () => {
    const options: { maxSteps?: number } = {};
    const resolved = resolveConfig({ model, limits: { maxSteps: options.maxSteps, deadlineMs: 5_000 } });
    expect(resolved.limits).toEqual({
      ...DEFAULT_LIMITS,
      maxStepsPerTask: DEFAULT_LIMITS.maxSteps,
      maxToolCalls: DEFAULT_LIMITS.maxSteps * DEFAULT_LIMITS.maxToolCallsPerReply,
      deadlineMs: 5_000,
    });
  });

  it('keeps the retry backoff, trace, policy and price defaults', () => {
    const resolved = resolveConfig({
      model,
      retry: { baseMs: undefined, maxMs: undefined },
      trace: { inMemory: undefined, onEvent: undefined },
      policy: { allow: undefined, requireApproval: undefined, decide: undefined },
      prices: { 'gpt-4.1': undefined },
    });
    expect(resolved.backoff).toEqual(DEFAULT_BACKOFF);
    expect(resolved.trace).toEqual(TRACE_DEFAULTS);
    expect(resolved.policy).toEqual({});
    expect(resolved.prices).toEqual(DEFAULT_PRICES);
  });

  it('keeps the top-level defaults', () => {
    const resolved = resolveConfig({
      model,
      instructions: undefined,
      tools: undefined,
      evaluate: undefined,
      tasks: undefined,
      limits: undefined,
      noProgress: undefined,
      policy: undefined,
      prices: undefined,
      trace: undefined,
      retry: undefined,
      clock: undefined,
      random: undefined,
      generateRunId: undefined,
      toolHealth: undefined,
    });
    expect(resolved).toMatchObject({
      instructions: '',
      evaluate: [],
      tasks: null,
      limits: {
        ...DEFAULT_LIMITS,
        maxStepsPerTask: DEFAULT_LIMITS.maxSteps,
        maxToolCalls: DEFAULT_LIMITS.maxSteps * DEFAULT_LIMITS.maxToolCallsPerReply,
      },
      clock: systemClock,
      random: Math.random,
      toolHealth: undefined,
    });
    expect(resolved.generateRunId()).toMatch(/^run_/);
  });

  it('keeps task defaults when a task field is undefined', () => {
    const resolved = resolveConfig({
      model,
      tasks: [{ id: 'draft', prompt: 'Write it', evaluate: undefined, requires: undefined, onFailure: undefined }],
    });
    expect(resolved.tasks).toEqual([{ id: 'draft', prompt: 'Write it' }]);
  });

  it('treats an undefined run id and signal as absent', () => {
    expect(validateRunInput({ goal: 'g', runId: undefined, signal: undefined })).toEqual({ goal: 'g' });
  });

  it('does not change the caller’s objects', () => {
    const limits = { maxSteps: undefined, deadlineMs: 5_000 };
    resolveConfig({ model, limits });
    expect(Object.keys(limits)).toEqual(['maxSteps', 'deadlineMs']);
  });
});

describe('Infinity switches a budget off; NaN is refused', () => {
  it.each(['maxCostUsd', 'maxInputTokens', 'maxOutputTokens', 'deadlineMs'] as const)('accepts %s: Infinity', (key) => {
    expect(resolveConfig({ model, limits: { [key]: Infinity } }).limits[key]).toBe(Infinity);
  });

  it.each(['maxSteps', 'maxRetries', 'maxParallelTools', 'maxToolResultBytes', 'maxArgumentRepairs'] as const)(
    'refuses %s: Infinity (a count stays finite)',
    (key) => {
      expect(configError(() => resolveConfig({ model, limits: { [key]: Infinity } })).issues).toEqual([
        { path: `limits.${key}`, message: 'expected a finite number, got Infinity' },
      ]);
    },
  );

  it.each([
    ['limits.maxSteps', { limits: { maxSteps: NaN } }, 'expected a number, got NaN'],
    ['limits.maxToolResultBytes', { limits: { maxToolResultBytes: NaN } }, 'expected a number, got NaN'],
    ['noProgress.repeatedToolCall', { noProgress: { repeatedToolCall: NaN } }, 'expected a number, got NaN'],
    ['retry.baseMs', { retry: { baseMs: NaN } }, 'expected a number, got NaN'],
    ['limits.maxCostUsd', { limits: { maxCostUsd: NaN } }, 'expected a number, got NaN (or Infinity for no limit)'],
    [
      'limits.deadlineMs',
      { limits: { deadlineMs: -Infinity } },
      'expected a finite number, got -Infinity (or Infinity for no limit)',
    ],
  ])('refuses %s with a clear message', (path, config, message) => {
    expect(configError(() => resolveConfig({ model, ...config })).issues).toEqual([{ path, message }]);
  });
});

describe('unreadable config and run input become LoopConfigError', () => {
  const throwing = (message: string) => {
    throw new Error(message);
  };

  it('names a limit whose getter throws', () => {
    const limits = {
      deadlineMs: 5_000,
      get maxSteps(): number {
        return throwing('getter exploded');
      },
    };
    const error = configError(() => resolveConfig({ model, limits }));
    expect(error.issues).toEqual([{ path: 'limits.maxSteps', message: 'could not be read: getter exploded' }]);
    expect(error.message).toMatch(/^Invalid loop config:/);
  });

  it('names a nested object that is a Proxy throwing on every read', () => {
    const trap = () => throwing('proxy trap');
    const limits = new Proxy({}, { ownKeys: trap, get: trap, getPrototypeOf: trap });
    expect(configError(() => resolveConfig({ model, limits })).issues).toEqual([
      { path: 'limits', message: 'could not be read: proxy trap' },
    ]);
  });

  it('reports a whole config that is a throwing Proxy at the root', () => {
    const config = new Proxy({ model }, { ownKeys: () => throwing('no keys for you') });
    expect(configError(() => resolveConfig(config)).issues).toEqual([
      { path: '', message: 'could not be read: no keys for you' },
    ]);
  });

  it('turns a model whose `id` getter throws during validation into a LoopConfigError', () => {
    const sneaky = {
      generate: () => Promise.reject(new Error('unused')),
      get id(): string {
        return throwing('id unavailable');
      },
    };
    const error = configError(() => resolveConfig({ model: sneaky }));
    expect(error.message).toMatch(/could not be validated: id unavailable/);
  });

  it('refuses a circular plain object instead of recursing forever', () => {
    const prices: Record<string, unknown> = {};
    prices.self = prices;
    expect(configError(() => resolveConfig({ model, prices })).issues).toEqual([
      { path: 'prices.self', message: 'refers to itself (a circular structure)' },
    ]);
  });

  it('says "Invalid run input" (scope run_input, code invalid_config) for a bad run input', () => {
    const error = configError(() => validateRunInput({ goal: '' }));
    expect(error.message).toMatch(/^Invalid run input:\n {2}- goal: expected a non-empty goal/);
    expect(error).toMatchObject({ scope: 'run_input', code: 'invalid_config', name: 'LoopConfigError' });
    expect(configError(() => resolveConfig({ model, limits: { maxSteps: 0 } })).scope).toBe('config');
  });

  it('names a run-input field whose getter throws', () => {
    const input = {
      get goal(): string {
        return throwing('goal getter');
      },
    };
    const error = configError(() => validateRunInput(input));
    expect(error.issues).toEqual([{ path: 'goal', message: 'could not be read: goal getter' }]);
    expect(error.message).toMatch(/^Invalid run input/);
  });

  it.each([
    ['a number', 42, 'expected the run id as a string, got number'],
    ['null', null, 'expected the run id as a string, got null'],
    ['an object', { id: 'r' }, 'expected the run id as a string, got object'],
  ])('refuses a run id that is %s', (_name, runId, message) => {
    expect(configError(() => validateRunInput({ goal: 'g', runId })).issues).toEqual([{ path: 'runId', message }]);
  });
});

describe('isolation in config', () => {
  it.each(['__proto__', 'constructor', 'prototype'])('refuses the task id %s', (id) => {
    // defineProperty, so `__proto__` is an own key as it would be in parsed JSON.
    const task = Object.defineProperty({ prompt: 'Do it' }, 'id', { value: id, enumerable: true });
    expect(configError(() => resolveConfig({ model, tasks: [task] })).issues).toEqual([
      { path: 'tasks[0].id', message: `"${id}" cannot be a task id; choose another name` },
    ]);
  });

  it('reports an own `__proto__` key as an unknown option instead of changing a prototype', () => {
    const limits = JSON.parse('{"__proto__": {"maxSteps": 1}}') as object;
    const error = configError(() => resolveConfig({ model, limits }));
    expect(error.issues).toEqual([{ path: 'limits.__proto__', message: expect.stringMatching(/^unknown option/) }]);
  });

  it('accepts a ToolHealth to share and refuses something that is not one', () => {
    const toolHealth = new ToolHealth();
    expect(resolveConfig({ model, toolHealth }).toolHealth).toBe(toolHealth);
    expect(resolveConfig({ model }).toolHealth).toBeUndefined();
    expect(configError(() => resolveConfig({ model, toolHealth: { isOpen: () => false } })).issues).toEqual([
      { path: 'toolHealth', message: 'expected a ToolHealth, e.g. new ToolHealth({ threshold: 3 })' },
    ]);
  });
});

describe('what the input snapshot keeps by reference', () => {
  it('keeps the model, tools, evaluators and clock themselves, and names an unreadable tools entry', () => {
    const clock = virtualClock();
    const json = evaluators.json();
    const resolved = resolveConfig({
      model,
      tools: [lookup],
      evaluate: [json],
      clock,
      tasks: [{ id: 't', prompt: 'p', evaluate: [json] }],
    });
    expect(resolved.model).toBe(model);
    expect(resolved.tools.get('lookup')).toBe(lookup);
    expect(resolved.evaluate[0]).toBe(json);
    expect((resolved.tasks?.[0]?.evaluate as readonly unknown[] | undefined)?.[0]).toBe(json);
    expect(resolved.clock).toBe(clock);
    const tools = Object.defineProperty([lookup], 1, {
      get: () => {
        throw new Error('lazy tool failed');
      },
      enumerable: true,
    });
    expect(configError(() => resolveConfig({ model, tools })).issues).toEqual([
      { path: 'tools[1]', message: 'could not be read: lazy tool failed' },
    ]);
  });
});

describe('tools the model could never reach, or that clash with the plan tool', () => {
  it('refuses a tool renamed after defineTool (the model calls it by the name it was defined with), and an empty name', () => {
    expect(configError(() => resolveConfig({ model, tools: [{ ...lookup, name: 'search' }] })).issues).toEqual([
      {
        path: 'tools[0].name',
        message:
          'expected the name the tool was defined with ("lookup"), got "search"; define the tool again with defineTool',
      },
    ]);
    expect(configError(() => resolveConfig({ model, tools: [{ ...lookup, name: '' }] })).issues[0]?.path).toBe(
      'tools[0].name',
    );
  });

  it('refuses a tool named update_plan while plan: true, and accepts it when the plan tool is off', () => {
    const own = defineTool({
      name: 'update_plan',
      description: 'My own plan store',
      input: z.object({ x: z.number() }),
      access: 'write',
      execute: () => 'ok',
    });
    expect(configError(() => resolveConfig({ model, tools: [own], plan: true })).issues[0]).toEqual({
      path: 'tools[0].name',
      message:
        '"update_plan" is the built-in plan tool\'s name while `plan: true`; rename your tool or turn the plan tool off',
    });
    expect(resolveConfig({ model, tools: [own] }).tools.get('update_plan')).toBe(own);
  });

  it('names a NaN context ceiling with what was expected', () => {
    expect(configError(() => resolveConfig({ model, context: { maxInputTokensPerCall: Number.NaN } })).issues).toEqual([
      {
        path: 'context.maxInputTokensPerCall',
        message: 'expected a positive whole number of tokens, or Infinity for no ceiling',
      },
    ]);
  });
});

describe('resolveConfig name', () => {
  it('defaults to loopstate and keeps a given name, trimmed', () => {
    expect(resolveConfig({ model }).name).toBe('loopstate');
    expect(resolveConfig({ model, name: undefined }).name).toBe('loopstate');
    expect(resolveConfig({ model, name: '  refund-agent ' }).name).toBe('refund-agent');
  });

  it.each([
    ['', 'name: expected a non-empty name (spaces alone do not count)'],
    ['   ', 'name: expected a non-empty name (spaces alone do not count)'],
    ['x'.repeat(129), 'name: expected at most 128 characters'],
    ['two\nlines', 'name: expected no control characters (newlines, tabs, ...)'],
    [42, 'name: expected the loop name as a string'],
  ])('refuses %j, naming the field', (name, expected) => {
    const error = configError(() => resolveConfig({ model, name }));
    expect(error.issues.map((issue) => `${issue.path}: ${issue.message}`)).toEqual([expected]);
  });

  it('takes a MeterProvider for the GenAI metrics and refuses anything else', () => {
    const meterProvider = { getMeter: () => ({}) };
    const resolved = resolveConfig({ model, trace: { otel: { meterProvider } } });
    expect(resolved.trace.otel === false ? null : resolved.trace.otel.meterProvider).toBe(meterProvider);
    const error = configError(() => resolveConfig({ model, trace: { otel: { meterProvider: {} } } }));
    expect(error.issues.map((issue) => issue.path)).toEqual(['trace.otel.meterProvider']);
  });
});
