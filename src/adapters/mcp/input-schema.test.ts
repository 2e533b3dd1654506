import { describe, expect, it } from 'vitest';
import { toInputSchema } from './input-schema.js';

const issuesOf = (schema: ReturnType<typeof toInputSchema>, value: unknown) => {
  const parsed = schema.input.safeParse(value);
  return parsed.success ? [] : parsed.error.issues.map((issue) => `${issue.path.join('.')}: ${issue.code}`);
};

describe('toInputSchema', () => {
  it('checks what servers send: $ref/$defs, additionalProperties, enums, nullable types and formats', () => {
    const schema = toInputSchema({
      $schema: 'http://json-schema.org/draft-07/schema#',
      type: 'object',
      properties: {
        address: { $ref: '#/$defs/Address' },
        note: { type: ['string', 'null'] },
        priority: { enum: ['low', 'high'] },
        email: { type: 'string', format: 'email' },
        labels: { type: 'object', additionalProperties: { type: 'number' } },
      },
      required: ['address'],
      additionalProperties: false,
      $defs: {
        Address: { type: 'object', properties: { zip: { type: 'string', minLength: 5 } }, required: ['zip'] },
      },
    });
    expect(schema.kind).toBe('converted');
    expect(
      issuesOf(schema, {
        address: { zip: '123' },
        note: null,
        priority: 'urgent',
        email: 'nope',
        labels: { a: 'x' },
        extra: 1,
      }),
    ).toEqual([
      'address.zip: too_small',
      'priority: invalid_value',
      'email: invalid_format',
      'labels.a: invalid_type',
      ': unrecognized_keys',
    ]);
    expect(issuesOf(schema, { address: { zip: '12345' }, note: null, priority: 'low', labels: { a: 1 } })).toEqual([]);
  });

  it('resolves local refs into definitions or $defs whichever the dialect (generators mix them)', () => {
    const address = { type: 'object', properties: { zip: { type: 'string', minLength: 5 } }, required: ['zip'] };
    for (const [dialect, keyword] of [
      ['http://json-schema.org/draft-07/schema#', 'definitions'],
      ['http://json-schema.org/draft-07/schema#', '$defs'],
      [undefined, 'definitions'],
      [undefined, '$defs'],
    ] as const) {
      const schema = toInputSchema({
        ...(dialect === undefined ? {} : { $schema: dialect }),
        type: 'object',
        properties: { home: { $ref: `#/${keyword}/Address` }, work: { $ref: `#/${keyword}/Address` } },
        [keyword]: { Address: address },
      });
      expect(schema.kind, `${String(dialect)} ${keyword}`).toBe('converted');
      expect(issuesOf(schema, { home: { zip: '1' }, work: { zip: '12345' } })).toEqual(['home.zip: too_small']);
    }
  });

  it('keeps unknown keys when the schema allows them (JSON Schema allows them by default)', () => {
    const schema = toInputSchema({ type: 'object', properties: { id: { type: 'string' } } });
    expect(schema.input.parse({ id: 'a', extra: 1 })).toEqual({ id: 'a', extra: 1 });
  });

  it('takes any object, and says why, for what zod cannot convert or a root that is no object', () => {
    const refused = toInputSchema({ type: 'object', properties: { x: { not: { type: 'string' } } } });
    expect(refused).toMatchObject({ kind: 'unchecked', reason: expect.stringContaining('not') });
    expect(refused.input.parse({ x: 'anything' })).toEqual({ x: 'anything' });
    expect(refused.input.safeParse('text').success).toBe(false);
    const remote = toInputSchema({ type: 'object', properties: { x: { $ref: 'https://example.com/x.json' } } });
    expect(remote).toMatchObject({ kind: 'unchecked', reason: expect.stringContaining('External $ref') });
    expect(toInputSchema({ type: 'string' })).toMatchObject({
      kind: 'unchecked',
      reason: expect.stringContaining('object'),
    });
  });
});
