import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { z } from 'zod';
import { createLoop, defineTool, memoryStore, StoreRecordError, type Store } from 'loopstate';
import { reply, scriptedModel, toolCall, virtualClock } from 'loopstate/testing';
import { refundTool } from '../../../test/support/refund-tool.js';
import { passesAsIs } from './as-is-check.js';
import { idRecordSchema } from './id-record.js';
import {
  eventRecordSchema,
  intentRecordSchema,
  modelRecordSchema,
  snapshotRecordSchema,
  toolResultRecordSchema,
  traceRecordSchema,
  transcriptRecordSchema,
  journalRecordSchema,
} from './records.js';
import { decodeJournalRecord, decodeRunRecord, decodeSnapshotRecord } from './record-codec.js';
import { runRecordSchema } from './run-record.js';

const journalSchemas: Record<string, z.ZodType> = {
  event: eventRecordSchema,
  model: modelRecordSchema,
  intent: intentRecordSchema,
  'tool-result': toolResultRecordSchema,
  trace: traceRecordSchema,
  transcript: transcriptRecordSchema,
};

/** Every record body of a store's runs, with the schema each is read with. */
async function recordsOf(store: Store, runIds: string[]): Promise<{ schema: z.ZodType; body: string }[]> {
  const records: { schema: z.ZodType; body: string }[] = [];
  for (const runId of runIds) {
    records.push({ schema: runRecordSchema, body: (await store.readRun(runId))!.body });
    const snapshot = await store.latestSnapshot(runId);
    if (snapshot !== null) records.push({ schema: snapshotRecordSchema, body: snapshot.body });
    for (const row of await store.readJournal(runId, 0))
      records.push({ schema: journalSchemas[row.kind]!, body: row.body });
  }
  return records;
}

/** Records of real runs: tool rounds with snapshots and chunks, a stop for approval and its continuation, tool health. */
async function realRecords(): Promise<{ schema: z.ZodType; body: string }[]> {
  const store = memoryStore();
  const lookup = defineTool({
    name: 'lookup',
    description: 'Look a key up.',
    input: z.object({ key: z.string() }),
    access: 'read',
    execute: ({ key }) => `value of ${key}`,
  });
  const calls = Array.from({ length: 9 }, (_, index) => toolCall('lookup', { key: `k${index}` }));
  await createLoop({
    model: scriptedModel([...calls, reply('done')]),
    tools: [lookup],
    clock: virtualClock(),
    durable: { snapshotEvery: 2 },
    store,
  }).run({ goal: 'look up', runId: 'lookups' });
  const refunds: string[] = [];
  const refunding = () =>
    createLoop({
      model: scriptedModel([toolCall('refund', { order_id: 'O-1' }), reply('refunded')]),
      tools: [refundTool(refunds)],
      clock: virtualClock(),
      store,
    });
  await refunding().run({ goal: 'refund O-1', runId: '__proto__' });
  const pending = (await refunding().resume('__proto__')).pendingApprovals[0]!;
  await refunding().resume('__proto__', { approvals: { [pending.callId]: { approve: true } } });
  return recordsOf(store, ['lookups', '__proto__']);
}

/** Equal values, and the same keys in the same order and the same prototypes all the way down. */
function sameAllTheWay(a: unknown, b: unknown, path = '(root)'): string | null {
  if (typeof a !== 'object' || a === null || typeof b !== 'object' || b === null)
    return Object.is(a, b) ? null : `${path}: ${String(a)} ≠ ${String(b)}`;
  if (Array.isArray(a) !== Array.isArray(b)) return `${path}: an array on one side only`;
  if (Object.getPrototypeOf(a) !== Object.getPrototypeOf(b)) return `${path}: another prototype`;
  const keys = Object.keys(a);
  if (JSON.stringify(keys) !== JSON.stringify(Object.keys(b)))
    return `${path}: keys ${JSON.stringify(keys)} ≠ ${JSON.stringify(Object.keys(b))}`;
  for (const key of keys) {
    const problem = sameAllTheWay(
      (a as Record<string, unknown>)[key],
      (b as Record<string, unknown>)[key],
      `${path}.${key}`,
    );
    if (problem !== null) return problem;
  }
  return null;
}

describe('passesAsIs', () => {
  it('passes every record this version writes, as zod would give it back (key order and prototypes too)', async () => {
    const records = await realRecords();
    expect(records.length).toBeGreaterThan(40);
    const kinds = new Set<string>();
    for (const { schema, body } of records) {
      const value: unknown = JSON.parse(body);
      kinds.add((value as { kind: string }).kind);
      // The fast path is taken (a record written in a new shape the checks cannot follow would lose it silently).
      expect(passesAsIs(schema, value), body.slice(0, 200)).toBe(true);
      expect(sameAllTheWay(value, schema.parse(JSON.parse(body)))).toBeNull();
      // A journal row is decoded with the union of the journal's records (a discriminated union): as it is, too.
      if (schema !== runRecordSchema && schema !== snapshotRecordSchema) {
        const row: unknown = JSON.parse(body);
        expect(passesAsIs(journalRecordSchema, row), body.slice(0, 200)).toBe(true);
        expect(sameAllTheWay(row, journalRecordSchema.parse(JSON.parse(body)))).toBeNull();
      }
    }
    expect([...kinds].sort()).toEqual(['event', 'intent', 'run', 'snapshot', 'trace', 'transcript']);
  });

  it('never passes a damaged record that zod refuses or would give back changed', async () => {
    const records = await realRecords();
    const json = fc.letrec((tie) => ({
      value: fc.oneof(
        { depthSize: 'small' },
        fc.constantFrom(null, true, false, 0, -1, 1.5, 2 ** 60, '', 'x', '__proto__'),
        fc.array(tie('value'), { maxLength: 2 }),
        fc.dictionary(fc.constantFrom('a', 'type', 'at', 'role', 'content', '__proto__'), tie('value'), { maxKeys: 2 }),
      ),
    })).value;
    /** A copy of `value` with one change at a node picked by `pick`: a value replaced, a key added, dropped or moved. */
    const damaged = (value: unknown, pick: number, change: number, replacement: unknown): unknown => {
      const nodes: Record<string, unknown>[] = [];
      const walk = (node: unknown) => {
        if (typeof node !== 'object' || node === null) return;
        nodes.push(node as Record<string, unknown>);
        for (const child of Object.values(node)) walk(child);
      };
      const copy: unknown = JSON.parse(JSON.stringify(value));
      walk(copy);
      const node = nodes[pick % nodes.length]!;
      const keys = Object.keys(node);
      const key = keys[pick % Math.max(1, keys.length)];
      if (change === 0 && key !== undefined) node[key] = replacement;
      else if (change === 1) Object.defineProperty(node, '__proto__', { value: replacement, enumerable: true });
      else if (change === 2 && key !== undefined) delete node[key];
      else if (change === 3 && key !== undefined) {
        // Moved to the end: zod puts it back in the shape's order (and so must the fast path).
        const moved = node[key];
        delete node[key];
        node[key] = moved;
      } else node.extra = replacement;
      return copy;
    };
    fc.assert(
      fc.property(
        fc.nat({ max: records.length - 1 }),
        fc.nat(),
        fc.nat({ max: 4 }),
        json,
        (index, pick, change, replacement) => {
          const { schema, body } = records[index]!;
          // As a store gives it back: JSON text (an array keeps no extra key, an undefined is dropped).
          const text = JSON.stringify(damaged(JSON.parse(body), pick, change, replacement));
          const value: unknown = JSON.parse(text);
          if (!passesAsIs(schema, value)) return;
          const parsed = schema.safeParse(JSON.parse(text));
          expect(parsed.success, text.slice(0, 300)).toBe(true);
          expect(sameAllTheWay(value, parsed.data)).toBeNull();
        },
      ),
      { numRuns: 3_000 },
    );
  });

  it('keeps an id record without a prototype, `__proto__` its own key, as zod gives it', () => {
    const schema = z.object({ holds: idRecordSchema(z.number()) }).strict();
    const value: unknown = JSON.parse('{"holds":{"__proto__":1,"constructor":2}}');
    expect(passesAsIs(schema, value)).toBe(true);
    const holds = (value as { holds: Record<string, number> }).holds;
    expect(Object.getPrototypeOf(holds)).toBeNull();
    expect(Object.keys(holds)).toEqual(['__proto__', 'constructor']);
    expect(sameAllTheWay(value, schema.parse(JSON.parse('{"holds":{"__proto__":1,"constructor":2}}')))).toBeNull();
    // A refused value changes nothing: its id records keep their prototype.
    const refused: unknown = JSON.parse('{"holds":{"a":1},"other":1}');
    expect(passesAsIs(schema, refused)).toBe(false);
    expect(Object.getPrototypeOf((refused as { holds: object }).holds)).toBe(Object.prototype);
  });

  it('leaves to zod what it has no rule for: transforms, refinements, other checks', () => {
    expect(
      passesAsIs(
        z.string().transform((text) => text.length),
        JSON.parse('"abc"'),
      ),
    ).toBe(false);
    expect(passesAsIs(z.string().email(), JSON.parse('"a@b.c"'))).toBe(false);
    expect(
      passesAsIs(
        z.number().refine((n) => n > 0),
        1,
      ),
    ).toBe(false);
    expect(passesAsIs(z.object({ a: z.number() }), { a: 1, b: 2 })).toBe(false); // zod strips b
    expect(passesAsIs(z.object({ a: z.unknown() }), {})).toBe(false); // zod adds a: undefined
    expect(passesAsIs(z.object({ a: z.number().int().min(0) }).strict(), { a: 2 })).toBe(true);
    expect(passesAsIs(z.object({ a: z.number().int().min(0) }).strict(), { a: -1 })).toBe(false);
    expect(passesAsIs(z.object({ a: z.number().int() }).strict(), { a: 2 ** 60 })).toBe(false);
    // A union passes a value only when every option before the one that passes it surely refuses it.
    const union = z.union([z.object({ a: z.number() }), z.object({ a: z.number(), b: z.number() }).strict()]);
    expect(passesAsIs(union, { a: 1, b: 2 })).toBe(false); // zod takes the first option, dropping b
    expect(passesAsIs(union, { a: 1 })).toBe(true);
    // A refinement on an object (or a record, a union) is a rule only zod knows, even when the shape passes.
    const refinedObject = z
      .object({ a: z.number() })
      .strict()
      .superRefine((value, context) => {
        if (value.a > 1) context.addIssue({ code: 'custom', path: ['a'], message: 'too big' });
      });
    expect(passesAsIs(refinedObject, { a: 2 })).toBe(false);
    expect(
      passesAsIs(
        z.record(z.string(), z.number()).refine(() => false),
        { a: 1 },
      ),
    ).toBe(false);
    // Checks zod keeps on the type itself, not in its `checks`, and an exclusive union.
    expect(passesAsIs(z.int(), 1.5)).toBe(false);
    expect(passesAsIs(z.int32(), 2 ** 40)).toBe(false);
    expect(passesAsIs(z.email(), 'nope')).toBe(false);
    expect(passesAsIs(z.uuid(), 'nope')).toBe(false);
    expect(passesAsIs(z.iso.datetime(), 'nope')).toBe(false);
    expect(passesAsIs(z.xor([z.looseObject({ a: z.number() }), z.looseObject({ a: z.number() })]), { a: 1 })).toBe(
      false,
    );
    // A discriminated union passes what the option its discriminator names accepts, and nothing else.
    const shapes = z.discriminatedUnion('kind', [
      z.object({ kind: z.literal('a'), size: z.number() }).strict(),
      z.object({ kind: z.literal('b'), size: z.string() }).strict(),
    ]);
    expect(passesAsIs(shapes, { kind: 'b', size: 'large' })).toBe(true);
    expect(passesAsIs(shapes, { kind: 'a', size: 'large' })).toBe(false);
    expect(passesAsIs(shapes, { kind: 'c', size: 1 })).toBe(false);
    expect(passesAsIs(shapes, { size: 1 })).toBe(false);
  });
});

describe('decoding a damaged record still names the field, through zod', () => {
  it('names the field of a snapshot, an event and a run record that is wrong', async () => {
    const records = await realRecords();
    const snapshot = JSON.parse(records.find(({ schema }) => schema === snapshotRecordSchema)!.body) as {
      runId: string;
      seq: number;
      session: { fields: { taskIndex: unknown } };
    };
    snapshot.session.fields.taskIndex = 'first';
    expect(() => decodeSnapshotRecord(JSON.stringify(snapshot), snapshot.runId, snapshot.seq)).toThrow(
      /session\.fields\.taskIndex: Invalid input: expected number, received string/,
    );
    const event = JSON.parse(records.find(({ body }) => body.includes('"kind":"event"'))!.body) as {
      runId: string;
      seq: number;
      delta: { transcript: { messages: unknown[] } };
    };
    event.delta.transcript.messages.push({ role: 'robot', content: 'hi' });
    expect(() => decodeJournalRecord(JSON.stringify(event), event.runId, event.seq)).toThrow(StoreRecordError);
    expect(() => decodeJournalRecord(JSON.stringify(event), event.runId, event.seq)).toThrow(
      /delta\.transcript\.messages\[\d+\]/,
    );
    const run = JSON.parse(records.find(({ schema }) => schema === runRecordSchema)!.body) as {
      runId: string;
      definition: { tools: unknown };
    };
    run.definition.tools = 'lookup';
    expect(() => decodeRunRecord(JSON.stringify(run), run.runId)).toThrow(/definition\.tools/);
  });
});
