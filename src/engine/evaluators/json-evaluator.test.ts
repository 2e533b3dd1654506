import { describe, expect, it } from 'vitest';
import { jsonEvaluator } from './json-evaluator.js';
import type { EvaluationInput } from './types.js';

const signal = new AbortController().signal;
const rawInput = (output: string): EvaluationInput => ({ output, parsed: output, signal, taskId: 'main' });

describe('evaluators.json', () => {
  it('passes valid JSON and hands on the parsed value', async () => {
    const result = await jsonEvaluator().evaluate(rawInput('{"status":"shipped","eta":3}'));
    expect(result).toEqual({ passed: true, reason: 'valid JSON', parsed: { status: 'shipped', eta: 3 } });
  });

  it('tolerates a ```json fence around the output', async () => {
    const result = await jsonEvaluator({ requiredFields: ['status'] }).evaluate(
      rawInput('```json\n{"status":"shipped"}\n```'),
    );
    expect(result).toMatchObject({ passed: true, parsed: { status: 'shipped' } });
  });

  it('fails malformed JSON with the parse error in the reason and keeps the raw text as parsed', async () => {
    let parseMessage = '';
    try {
      JSON.parse('{"status": "shipped",}');
    } catch (error) {
      parseMessage = (error as Error).message;
    }
    const result = await jsonEvaluator().evaluate(rawInput('{"status": "shipped",}'));
    expect(result).toEqual({
      passed: false,
      reason: `output is not valid JSON: ${parseMessage}`,
      parsed: '{"status": "shipped",}',
    });
  });

  it('fails an empty output, and passes prose around one fenced block', async () => {
    expect(await jsonEvaluator().evaluate(rawInput(''))).toMatchObject({
      passed: false,
      reason: 'output is not valid JSON: Unexpected end of JSON input',
    });
    const prose = await jsonEvaluator().evaluate(rawInput('Sure! Here it is:\n```json\n{"a":1}\n```\nAnything else?'));
    expect(prose).toMatchObject({ passed: true, parsed: { a: 1 } });
  });

  it('fails two different JSON values with a reason the model can act on', async () => {
    const result = await jsonEvaluator().evaluate(rawInput('Either {"a":1} or {"a":2}'));
    expect(result).toMatchObject({
      passed: false,
      reason: expect.stringMatching(/^output is not valid JSON: found 2 JSON values .*expected exactly one$/),
    });
  });

  it('lists every missing required field by name, in the order given', async () => {
    const result = await jsonEvaluator({ requiredFields: ['status', 'eta', 'carrier'] }).evaluate(
      rawInput('{"eta": 3}'),
    );
    expect(result).toEqual({ passed: false, reason: 'missing required fields: status, carrier', parsed: { eta: 3 } });
  });

  it('counts a field present with null as present, and passes when all are there', async () => {
    const result = await jsonEvaluator({ requiredFields: ['status', 'eta'] }).evaluate(
      rawInput('{"status":"x","eta":null}'),
    );
    expect(result).toMatchObject({ passed: true, reason: 'valid JSON with all required fields' });
  });

  it('does not take inherited properties for required fields', async () => {
    const result = await jsonEvaluator({ requiredFields: ['toString'] }).evaluate(rawInput('{}'));
    expect(result).toMatchObject({ passed: false, reason: 'missing required fields: toString' });
  });

  it.each([
    ['[1,2]', 'array'],
    ['42', 'number'],
    ['null', 'null'],
    ['"text"', 'string'],
  ])('fails %s when fields are required, naming its type', async (output, type) => {
    const result = await jsonEvaluator({ requiredFields: ['status'] }).evaluate(rawInput(output));
    expect(result).toMatchObject({ passed: false, reason: `expected a JSON object with fields status, got ${type}` });
  });

  it('accepts any JSON value when no fields are required', async () => {
    expect(await jsonEvaluator().evaluate(rawInput('[1]'))).toMatchObject({ passed: true, parsed: [1] });
  });

  it('checks an already-parsed value without parsing it again', async () => {
    const result = await jsonEvaluator({ requiredFields: ['a'] }).evaluate({
      output: 'ignored',
      parsed: { b: 1 },
      signal,
      taskId: 't',
    });
    expect(result).toEqual({ passed: false, reason: 'missing required fields: a', parsed: { b: 1 } });
  });

  it('is a format evaluator named json unless renamed', () => {
    expect(jsonEvaluator()).toMatchObject({ name: 'json', kind: 'format' });
    expect(jsonEvaluator({ name: 'order-json' }).name).toBe('order-json');
  });
});
