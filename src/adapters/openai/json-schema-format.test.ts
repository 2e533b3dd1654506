import { describe, expect, it } from 'vitest';
import { z } from 'zod';
import { toOpenAIFormat, withoutAddedNulls } from './json-schema-format.js';

const jsonSchema = (schema: z.ZodType) => z.toJSONSchema(schema, { io: 'input' }) as Record<string, unknown>;

describe('toOpenAIFormat', () => {
  it('makes every property required, optional ones nullable, and closes every object', () => {
    const schema = jsonSchema(
      z.object({
        id: z.string(),
        note: z.string().optional(),
        items: z.array(z.object({ sku: z.string(), qty: z.number().int().optional() })),
      }),
    );
    const format = toOpenAIFormat('answer', schema);
    expect(format?.strict).toBe(true);
    expect(format?.schema).toMatchObject({
      type: 'object',
      required: ['id', 'note', 'items'],
      additionalProperties: false,
      properties: {
        note: { type: ['string', 'null'] },
        items: {
          type: 'array',
          items: {
            required: ['sku', 'qty'],
            additionalProperties: false,
            properties: { qty: { type: ['integer', 'null'] } },
          },
        },
      },
    });
    expect(format?.schema).not.toHaveProperty('$schema');
  });

  it('makes an optional enum nullable with anyOf', () => {
    const format = toOpenAIFormat('answer', jsonSchema(z.object({ status: z.enum(['a', 'b']).optional() })));
    expect((format?.schema.properties as Record<string, unknown>).status).toEqual({
      anyOf: [{ type: 'string', enum: ['a', 'b'] }, { type: 'null' }],
    });
  });

  it('leaves an already nullable optional property as it is', () => {
    const schema = jsonSchema(z.object({ note: z.string().nullable().optional() }));
    const format = toOpenAIFormat('answer', schema);
    expect((format?.schema.properties as Record<string, unknown>).note).toEqual(
      (schema.properties as Record<string, unknown>).note,
    );
  });

  it('sends a schema strict mode cannot take as non-strict: a record, an intersection', () => {
    expect(toOpenAIFormat('answer', jsonSchema(z.object({ tags: z.record(z.string(), z.number()) })))?.strict).toBe(
      false,
    );
    expect(
      toOpenAIFormat('answer', { type: 'object', allOf: [{ properties: { a: { type: 'string' } } }] })?.strict,
    ).toBe(false);
  });

  it('is null for a root that is not an object', () => {
    expect(toOpenAIFormat('answer', jsonSchema(z.array(z.string())))).toBeNull();
    expect(toOpenAIFormat('answer', jsonSchema(z.string()))).toBeNull();
  });
});

describe('withoutAddedNulls', () => {
  const schema = jsonSchema(
    z.object({
      id: z.string(),
      note: z.string().optional(),
      keep: z.string().nullable(),
      items: z.array(z.object({ qty: z.number().optional() })),
    }),
  );

  it('deletes nulls of optional, non-nullable properties at any depth', () => {
    expect(withoutAddedNulls('{"id":"1","note":null,"keep":null,"items":[{"qty":null},{"qty":2}]}', schema)).toBe(
      '{"id":"1","keep":null,"items":[{},{"qty":2}]}',
    );
    const parsed = z
      .object({
        id: z.string(),
        note: z.string().optional(),
        keep: z.string().nullable(),
        items: z.array(z.object({ qty: z.number().optional() })),
      })
      .safeParse(JSON.parse(withoutAddedNulls('{"id":"1","note":null,"keep":null,"items":[{"qty":null}]}', schema)));
    expect(parsed.success).toBe(true);
  });

  it('returns the text unchanged when nothing was added or it is not JSON', () => {
    const text = '{ "id": "1", "keep": "x", "items": [] }';
    expect(withoutAddedNulls(text, schema)).toBe(text);
    expect(withoutAddedNulls('not json', schema)).toBe('not json');
  });
});
