import { describe, expect, it } from 'vitest';
import { reply, scriptedModel } from '../../testing/index.js';
import { evaluators, validateEvaluators } from './index.js';

const judge = () =>
  evaluators.judge({ model: scriptedModel([reply('{"passed":true,"reason":"ok"}')]), criteria: 'polite' });
const JUDGE_ONLY = {
  path: '',
  message: 'an LLM judge must not be the only check: add a format (json, schema) or rule evaluator',
};

describe('validateEvaluators', () => {
  it('accepts an empty list and lists with a format or rule check', () => {
    expect(validateEvaluators([])).toEqual([]);
    expect(validateEvaluators([evaluators.json(), judge()])).toEqual([]);
    expect(validateEvaluators([evaluators.rule(() => true, 'r'), judge()])).toEqual([]);
  });

  it('rejects a judge as the only check', () => {
    expect(validateEvaluators([judge()])).toEqual([JUDGE_ONLY]);
  });

  it('rejects several judges with nothing else', () => {
    expect(validateEvaluators([judge(), judge()])).toEqual([JUDGE_ONLY]);
  });

  it('names each malformed entry by its index and field', () => {
    expect(validateEvaluators([null, { name: '', kind: 'vibes', evaluate: 'no' }])).toEqual([
      { path: '[0]', message: 'expected an evaluator object { name, kind, evaluate }' },
      { path: '[1].name', message: 'expected a non-empty string' },
      { path: '[1].kind', message: "expected 'format', 'rule' or 'judge'" },
      { path: '[1].evaluate', message: 'expected a function' },
    ]);
  });

  it('exposes the five builders and chain on a frozen evaluators object', () => {
    expect(Object.keys(evaluators)).toEqual(['json', 'schema', 'rule', 'judge', 'review', 'chain']);
    expect(Object.isFrozen(evaluators)).toBe(true);
  });
});
