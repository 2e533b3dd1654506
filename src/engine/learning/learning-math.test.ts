import { describe, expect, it } from 'vitest';
import {
  addBatch,
  decayFactor,
  decayedRecord,
  mergeBatch,
  taskFeedbackOf,
  type LearningBatch,
  type ToolBatch,
} from './learning-math.js';
import { emptyLearningRecord, type LearningRecord } from './learning-record.js';

const HOUR = 3_600_000;
const rules = { learningRate: 0.2, halfLifeMs: HOUR, topReasons: 3 };

const toolBatch = (outcomes: string, at = 0): ToolBatch => {
  const batch: ToolBatch = {
    successes: 0,
    failures: 0,
    totalLatencyMs: 0,
    trailingFailures: 0,
    sawSuccess: false,
    lastFailureAt: 0,
  };
  for (const outcome of outcomes) {
    batch.totalLatencyMs += 10;
    if (outcome === 's') {
      batch.successes += 1;
      batch.sawSuccess = true;
      batch.trailingFailures = 0;
    } else {
      batch.failures += 1;
      batch.trailingFailures += 1;
      batch.lastFailureAt = at;
    }
  }
  return batch;
};
const batchOf = (tools: Record<string, string>, at = 0): LearningBatch => ({
  tools: new Map(Object.entries(tools).map(([name, outcomes]) => [name, toolBatch(outcomes, at)])),
  tasks: new Map(),
});

describe('decayFactor', () => {
  it('halves per half-life, and is 1 for no time, a clock that went back, or no half-life', () => {
    expect(decayFactor(HOUR, HOUR)).toBe(0.5);
    expect(decayFactor(3 * HOUR, HOUR)).toBe(0.125);
    expect(decayFactor(0, HOUR)).toBe(1);
    expect(decayFactor(-HOUR, HOUR)).toBe(1);
    expect(decayFactor(HOUR, Infinity)).toBe(1);
  });
});

describe('mergeBatch', () => {
  it('moves a weight learningRate of the way to the batch success rate, never further', () => {
    const record = mergeBatch(emptyLearningRecord('bot', null, 0), batchOf({ search: 'ff' }), 0, rules);
    expect(record.tools.search?.weight).toBeCloseTo(0.8, 12);
    const again = mergeBatch(record, batchOf({ search: 'sf' }), 0, rules);
    expect(again.tools.search?.weight).toBeCloseTo(0.8 + 0.2 * (0.5 - 0.8), 12);
    const full = mergeBatch(record, batchOf({ search: 'ffff' }), 0, { ...rules, learningRate: 1 });
    expect(full.tools.search?.weight).toBe(0);
  });

  it('adds counts, so two writers’ batches add up in either order', () => {
    const start = mergeBatch(emptyLearningRecord('bot', null, 0), batchOf({ search: 'ssf' }), 0, rules);
    const a = batchOf({ search: 'sf', fetch: 's' });
    const b = batchOf({ search: 'fff' });
    const ab = mergeBatch(mergeBatch(start, a, 0, rules), b, 0, rules);
    const ba = mergeBatch(mergeBatch(start, b, 0, rules), a, 0, rules);
    for (const merged of [ab, ba]) {
      expect(merged.tools.search).toMatchObject({ successes: 3, failures: 5, totalLatencyMs: 80 });
      expect(merged.tools.fetch).toMatchObject({ successes: 1, failures: 0 });
    }
  });

  it('continues a failure streak through batches of failures, and a success ends it', () => {
    let record = mergeBatch(emptyLearningRecord('bot', null, 0), batchOf({ search: 'ff' }, 5), 5, rules);
    expect(record.tools.search).toMatchObject({ consecutiveFailures: 2, lastFailureAt: 5 });
    record = mergeBatch(record, batchOf({ search: 'f' }, 9), 9, rules);
    expect(record.tools.search).toMatchObject({ consecutiveFailures: 3, lastFailureAt: 9 });
    record = mergeBatch(record, batchOf({ search: 'fsf' }, 12), 12, rules);
    expect(record.tools.search).toMatchObject({ consecutiveFailures: 1, lastFailureAt: 12 });
  });

  it('fades counts by the half-life first, and weights back towards 1', () => {
    const record = mergeBatch(emptyLearningRecord('bot', null, 0), batchOf({ search: 'ffff' }), 0, rules);
    const later = mergeBatch(record, batchOf({ search: 's' }), 2 * HOUR, rules);
    expect(later.tools.search?.failures).toBeCloseTo(1, 12);
    expect(later.tools.search?.successes).toBe(1);
    // 0.8 faded over two half-lives: 1 − 0.2/4 = 0.95; then a batch of one success: 0.95 + 0.2 × 0.05.
    expect(later.tools.search?.weight).toBeCloseTo(0.96, 12);
    expect(later.updatedAt).toBe(2 * HOUR);
  });

  it('keeps each task’s pass rate and failure reasons, the most frequent first', () => {
    const batch: LearningBatch = {
      tools: new Map(),
      tasks: new Map([['draft', { passes: 1, failures: 3, reasons: { 'missing total': 2, 'not JSON': 1 } }]]),
    };
    const record = mergeBatch(emptyLearningRecord('bot', null, 0), batch, 0, rules);
    expect(record.tasks.draft).toMatchObject({ passes: 1, failures: 3 });
    expect(record.tasks.draft?.passRate).toBeCloseTo(1 + 0.2 * (0.25 - 1), 12);
    expect(taskFeedbackOf(record.tasks.draft!, 1).topFailureReasons).toEqual([{ reason: 'missing total', count: 2 }]);
  });

  it('forgets reasons that faded away and keeps at most 20', () => {
    const reasons = Object.fromEntries(Array.from({ length: 30 }, (_, index) => [`reason ${index}`, index + 1]));
    const batch: LearningBatch = { tools: new Map(), tasks: new Map([['t', { passes: 0, failures: 30, reasons }]]) };
    const record = mergeBatch(emptyLearningRecord('bot', null, 0), batch, 0, rules);
    expect(Object.keys(record.tasks.t!.reasons)).toHaveLength(20);
    expect(record.tasks.t!.reasons['reason 29']).toBe(30);
    expect(record.tasks.t!.reasons['reason 0']).toBeUndefined();
    const faded = decayedRecord(record, 20 * HOUR, HOUR);
    // 30 × 2^-20 < 0.01: all forgotten.
    expect(faded.tasks.t!.reasons).toEqual({});
  });

  it('keeps a tool named __proto__ as its own entry', () => {
    const record: LearningRecord = mergeBatch(
      emptyLearningRecord('bot', null, 0),
      batchOf({ ['__proto__']: 'f' }),
      0,
      rules,
    );
    expect(Object.keys(record.tools)).toEqual(['__proto__']);
    expect(JSON.parse(JSON.stringify(record)).tools.__proto__.failures).toBe(1);
  });
});

describe('addBatch', () => {
  it('adds later outcomes as if both were one batch: counts add, a later success ends the streak', () => {
    for (const [first, second] of [
      ['ff', 'f'],
      ['ff', 'sf'],
      ['sf', 'ff'],
      ['', 'sf'],
      ['f', ''],
    ] as const) {
      const into = batchOf(first === '' ? {} : { t: first }, 1);
      addBatch(into, batchOf(second === '' ? {} : { t: second }, 2));
      const whole = toolBatch(first + second);
      expect(into.tools.get('t'), `${first} + ${second}`).toEqual({
        ...whole,
        lastFailureAt: second.includes('f') ? 2 : 1,
      });
    }
    const tasks: LearningBatch = {
      tools: new Map(),
      tasks: new Map([['t', { passes: 1, failures: 1, reasons: { a: 1 } }]]),
    };
    addBatch(tasks, {
      tools: new Map(),
      tasks: new Map([['t', { passes: 0, failures: 2, reasons: { a: 1, b: 1 } }]]),
    });
    expect(tasks.tasks.get('t')).toEqual({ passes: 1, failures: 3, reasons: { a: 2, b: 1 } });
  });
});
