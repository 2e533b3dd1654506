import { describe, expect, it } from 'vitest';
import { z } from 'zod';
import { formatZodIssues, schemaEvaluator } from './schema-evaluator.js';
import type { EvaluationInput } from './types.js';

const signal = new AbortController().signal;
const rawInput = (output: string): EvaluationInput => ({ output, parsed: output, signal, taskId: 'main' });

const order = z.object({
  status: z.enum(['shipped', 'pending']),
  items: z.array(z.object({ sku: z.string(), quantity: z.number().int().positive() })),
});

describe('evaluators.schema', () => {
  it('parses the raw output as JSON when no format evaluator ran', async () => {
    const result = await schemaEvaluator(order).evaluate(
      rawInput('{"status":"shipped","items":[{"sku":"A","quantity":1}]}'),
    );
    expect(result).toEqual({
      passed: true,
      reason: 'matches the schema',
      parsed: { status: 'shipped', items: [{ sku: 'A', quantity: 1 }] },
    });
  });

  it('tolerates a fenced raw output', async () => {
    const result = await schemaEvaluator(order).evaluate(rawInput('```json\n{"status":"pending","items":[]}\n```'));
    expect(result.passed).toBe(true);
  });

  it('fails raw text that is not JSON', async () => {
    const result = await schemaEvaluator(order).evaluate(rawInput('The order shipped.'));
    expect(result).toMatchObject({ passed: false, parsed: 'The order shipped.' });
    expect(result.reason).toMatch(/^output is not valid JSON: Unexpected token/);
  });

  it('lists every zod issue as path: message, with nested array paths', async () => {
    const result = await schemaEvaluator(order).evaluate(
      rawInput('{"status":"lost","items":[{"sku":"A","quantity":0},{"quantity":1}]}'),
    );
    expect(result.passed).toBe(false);
    expect(result.reason).toBe(
      'output does not match the schema: ' +
        'status: Invalid option: expected one of "shipped"|"pending"; ' +
        'items[0].quantity: Too small: expected number to be >0; ' +
        'items[1].sku: Invalid input: expected string, received undefined',
    );
    expect(result.parsed).toMatchObject({ status: 'lost' });
  });

  it('names the root for an issue about the value itself', async () => {
    const result = await schemaEvaluator(order).evaluate(rawInput('[]'));
    expect(result.reason).toBe(
      'output does not match the schema: (root): Invalid input: expected object, received array',
    );
  });

  it('hands on the schema output, with defaults and transforms applied', async () => {
    const schema = z.object({
      name: z.string().transform((name) => name.toUpperCase()),
      tags: z.array(z.string()).default([]),
    });
    const result = await schemaEvaluator(schema).evaluate(rawInput('{"name":"ada"}'));
    expect(result.parsed).toEqual({ name: 'ADA', tags: [] });
  });

  it('validates an already-parsed value as is, without parsing a JSON string literal twice', async () => {
    // evaluators.json turned the output '"hello"' into the string 'hello'; it must not be parsed again.
    const result = await schemaEvaluator(z.literal('hello')).evaluate({
      output: '"hello"',
      parsed: 'hello',
      signal,
      taskId: 't',
    });
    expect(result).toMatchObject({ passed: true, parsed: 'hello' });
  });

  it('supports async refinements', async () => {
    const schema = z
      .object({ id: z.string() })
      .refine(async (value) => value.id.startsWith('O-'), { message: 'unknown order id', path: ['id'] });
    expect(await schemaEvaluator(schema).evaluate(rawInput('{"id":"O-1"}'))).toMatchObject({ passed: true });
    expect(await schemaEvaluator(schema).evaluate(rawInput('{"id":"X-1"}'))).toMatchObject({
      passed: false,
      reason: 'output does not match the schema: id: unknown order id',
    });
  });

  it('is a format evaluator named schema unless renamed', () => {
    expect(schemaEvaluator(order)).toMatchObject({ name: 'schema', kind: 'format' });
    expect(schemaEvaluator(order, { name: 'order' }).name).toBe('order');
  });
});

describe('formatZodIssues', () => {
  it('joins issues with "; " and prints paths like tools[1].name', () => {
    const result = z.safeParse(z.object({ tools: z.array(z.object({ name: z.string() })) }), {
      tools: [{ name: 'a' }, {}],
    });
    expect(result.success).toBe(false);
    expect(formatZodIssues(result.error?.issues ?? [])).toBe(
      'tools[1].name: Invalid input: expected string, received undefined',
    );
  });
});
