/**
 * Reading and writing a durable run's records: a record is decoded whole or refused whole (`StoreRecordError`), and
 * encoded as JSON.
 */
import type { z } from 'zod';
import { describeZodIssues } from '../zod-issues.js';
import { StoreRecordError } from './durable-errors.js';
import { passesAsIs } from './as-is-check.js';
import {
  fieldsMissingBefore5,
  journalRecordSchema,
  RECORD_SCHEMA_VERSION,
  snapshotRecordSchema,
  type JournalRecord,
  type SnapshotRecord,
} from './records.js';
import { ledgerRecordSchema, runRecordSchema, type LedgerRecord, type RunRecord } from './run-record.js';

/** Parses and validates one record; `seq` null is the run's metadata record (or a tenant's ledger, `runId` then naming it). */
function decode<Schema extends z.ZodType>(
  schema: Schema,
  body: string,
  runId: string,
  seq: number | null,
  owner: 'runId' | 'tenantId' = 'runId',
): z.output<Schema> {
  let value: unknown;
  try {
    value = JSON.parse(body);
  } catch (error) {
    throw new StoreRecordError({
      code: 'corrupt_record',
      runId,
      seq,
      problem: `not valid JSON (truncated or overwritten): ${(error as Error).message}`,
    });
  }
  const version = (value as { schemaVersion?: unknown } | null)?.schemaVersion;
  if (typeof version === 'number' && version > RECORD_SCHEMA_VERSION) {
    throw new StoreRecordError({
      code: 'unsupported_record_version',
      runId,
      seq,
      problem: `schemaVersion ${version} is newer than this loopstate reads (${RECORD_SCHEMA_VERSION}); upgrade loopstate to resume it`,
    });
  }
  // A record as this loopstate writes it passes as it is (no zod walk, no copy); zod runs for any other, and names what is wrong.
  let data: z.output<Schema>;
  if (passesAsIs(schema, value)) data = value as z.output<Schema>;
  else {
    const parsed = schema.safeParse(value);
    if (!parsed.success) {
      throw new StoreRecordError({
        code: 'corrupt_record',
        runId,
        seq,
        problem: `not a valid record: ${describeZodIssues(parsed.error.issues).join('; ')}`,
      });
    }
    data = parsed.data;
  }
  const decoded = data as { runId?: unknown; tenantId?: unknown; seq?: unknown };
  if (decoded[owner] !== runId || (seq !== null && decoded.seq !== seq)) {
    throw new StoreRecordError({
      code: 'corrupt_record',
      runId,
      seq,
      problem: `it names ${String(decoded[owner])}${seq === null ? '' : ` seq ${String(decoded.seq)}`}, not where it is stored`,
    });
  }
  return data;
}

export function decodeJournalRecord(body: string, runId: string, seq: number): JournalRecord {
  const record = decode(journalRecordSchema, body, runId, seq);
  const missing = record.kind === 'event' ? fieldsMissingBefore5(record) : [];
  if (missing.length > 0)
    throw new StoreRecordError({
      code: 'corrupt_record',
      runId,
      seq,
      problem: `not a valid record: ${missing
        .map((key) => `delta.fields.${key}: missing (an event of version ${record.schemaVersion} carries every field)`)
        .join('; ')}`,
    });
  return record;
}
export const decodeSnapshotRecord = (body: string, runId: string, seq: number): SnapshotRecord =>
  decode(snapshotRecordSchema, body, runId, seq);
export const decodeRunRecord = (body: string, runId: string): RunRecord => decode(runRecordSchema, body, runId, null);
export const decodeLedgerRecord = (body: string, tenantId: string): LedgerRecord =>
  decode(ledgerRecordSchema, body, tenantId, null, 'tenantId');

/** Serialises a record; bigints (database ids) are written as their decimal text, as tool results are. */
export function encodeRecord(record: JournalRecord | SnapshotRecord | RunRecord | LedgerRecord): string {
  try {
    // Without a replacer first: a replacer function makes JSON.stringify several times slower, and bigints are rare.
    return JSON.stringify(record);
  } catch {
    return JSON.stringify(record, (_key, item: unknown) => (typeof item === 'bigint' ? item.toString() : item));
  }
}
