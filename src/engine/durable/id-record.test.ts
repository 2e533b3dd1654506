import { describe, expect, it } from 'vitest';
import { z } from 'zod';
import { hasId, idRecordSchema } from './id-record.js';
import { RECORD_SCHEMA_VERSION } from './records.js';
import { decodeLedgerRecord, encodeRecord } from './record-codec.js';
import { type LedgerRecord } from './run-record.js';

describe('idRecordSchema', () => {
  const schema = idRecordSchema(z.number(), 'an object keyed by run id');

  it('keeps every own key, __proto__ included, on an object without a prototype', () => {
    const parsed = schema.parse(JSON.parse('{"__proto__": 1, "constructor": 2, "toString": 3, "hasOwnProperty": 4}'));
    expect(Object.getPrototypeOf(parsed)).toBeNull();
    expect(Object.keys(parsed)).toEqual(['__proto__', 'constructor', 'toString', 'hasOwnProperty']);
    expect(parsed['__proto__']).toBe(1);
    expect(JSON.stringify(parsed)).toBe('{"__proto__":1,"constructor":2,"toString":3,"hasOwnProperty":4}');
  });

  it('has no inherited members to mistake for ids', () => {
    const parsed = schema.parse({});
    expect(hasId(parsed, 'constructor')).toBe(false);
    expect(hasId(parsed, 'toString')).toBe(false);
    expect(hasId({}, 'constructor')).toBe(false);
  });

  it('names the id of a bad value, and refuses what is not an object', () => {
    expect(schema.safeParse({ constructor: 'x' }).error?.issues).toEqual([
      expect.objectContaining({ path: ['constructor'] }),
    ]);
    expect(schema.safeParse([1]).error?.issues).toEqual([
      expect.objectContaining({ message: 'expected an object keyed by run id' }),
    ]);
  });
});

describe('records keyed by id', () => {
  it('read back a tenant hold of a run named __proto__', () => {
    const hold = { costUsd: 0.5, inputTokens: null, outputTokens: null };
    const holds = Object.fromEntries([
      ['__proto__', hold],
      ['constructor', hold],
    ]) as LedgerRecord['holds'];
    const ledger: LedgerRecord = {
      schemaVersion: RECORD_SCHEMA_VERSION,
      kind: 'ledger',
      tenantId: 'acme',
      spent: { costUsd: 0, inputTokens: 0, outputTokens: 0 },
      holds,
    };
    const decoded = decodeLedgerRecord(encodeRecord(ledger), 'acme');
    expect(Object.keys(decoded.holds)).toEqual(['__proto__', 'constructor']);
    expect(decoded.holds['__proto__']).toEqual(hold);
  });
});
