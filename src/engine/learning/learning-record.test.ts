import { describe, expect, it } from 'vitest';
import {
  decodeLearningRecord,
  emptyLearningRecord,
  encodeLearningRecord,
  learningKey,
  LearningRecordError,
} from './learning-record.js';

describe('learning records', () => {
  it('key a loop by name and tenant, unambiguously', () => {
    expect(learningKey('bot', null)).toBe('["bot",null]');
    expect(learningKey('bot', 'acme')).toBe('["bot","acme"]');
    expect(learningKey('a","b', null)).not.toBe(learningKey('a', 'b'));
  });

  it('round-trip, a tool named __proto__ included', () => {
    const record = emptyLearningRecord('bot', 'acme', 5);
    record.tools['__proto__'] = {
      successes: 1,
      failures: 0.5,
      totalLatencyMs: 3,
      weight: 0.9,
      consecutiveFailures: 0,
      lastFailureAt: 0,
    };
    const decoded = decodeLearningRecord(encodeLearningRecord(record), 'k');
    expect(Object.keys(decoded.tools)).toEqual(['__proto__']);
    expect(decoded.tools['__proto__']?.weight).toBe(0.9);
    expect(Object.getPrototypeOf(decoded.tools)).toBeNull();
  });

  it.each([
    ['{"schemaVersion":1', 'corrupt_record', /not JSON/],
    [
      '{"schemaVersion":1,"kind":"learning","name":"bot","tenantId":null,"updatedAt":0,"tools":{"x":{"successes":-1,"failures":0,"totalLatencyMs":0,"weight":1,"consecutiveFailures":0,"lastFailureAt":0}},"tasks":{}}',
      'corrupt_record',
      /tools\.x\.successes/,
    ],
    [
      '{"schemaVersion":1,"kind":"learning","name":"bot","tenantId":null,"updatedAt":0,"tools":{"x":{"successes":1,"failures":0,"totalLatencyMs":0,"weight":1.5,"consecutiveFailures":0,"lastFailureAt":0}},"tasks":{}}',
      'corrupt_record',
      /tools\.x\.weight/,
    ],
    ['{"schemaVersion":2,"kind":"learning"}', 'unsupported_record_version', /schemaVersion 2 is newer/],
    ['null', 'corrupt_record', /expected object/],
  ])('refuse %s with a LearningRecordError naming the key', (body, code, problem) => {
    let thrown: unknown;
    try {
      decodeLearningRecord(body, '["bot",null]');
    } catch (error) {
      thrown = error;
    }
    expect(thrown).toBeInstanceOf(LearningRecordError);
    expect(thrown).toMatchObject({ code, key: '["bot",null]' });
    expect((thrown as Error).message).toMatch(/^Refused the learning record \["bot",null\]: /);
    expect((thrown as LearningRecordError).problem).toMatch(problem);
  });
});
