/**
 * Run, journal and snapshot bodies as SQLite stores them: a row of at least `PACK_FROM` characters is deflated
 * against a preset dictionary (record-dictionary.ts) into the `packed` column, its `body` then empty; a
 * shorter one stays text. Packed: one byte naming the dictionary, then raw deflate.
 */
import { deflateRawSync, inflateRawSync } from 'node:zlib';
import { StoreRecordError } from '../../engine/durable/durable-errors.js';
import { CURRENT_DICTIONARY, RECORD_DICTIONARIES } from './record-dictionary.js';

/** Below this a row stays text: deflating it saves fewer bytes than SQLite's own per-row overhead is worth the time. */
export const PACK_FROM = 200;

const dictionaries = new Map(
  Object.entries(RECORD_DICTIONARIES).map(([version, text]) => [Number(version), Buffer.from(text, 'utf8')]),
);
const current = dictionaries.get(CURRENT_DICTIONARY)!;
const DEFLATE_OPTIONS = { level: 1, windowBits: 13, memLevel: 8, dictionary: current };

/** The columns to write for a body: text as is, or packed. */
export function pack(body: string): { body: string; packed: Buffer | null } {
  if (body.length < PACK_FROM) return { body, packed: null };
  // Level 1: a record deflates to nearly the same size at level 6, in half the time. An 8 KiB window (not
  // zlib's 32 KiB) still reaches the dictionary from a row of a few KB, and sets up in a fraction of the time
  // (most of a small row's deflate is setting up the window and hash table); any inflater reads it.
  const deflated = deflateRawSync(body, DEFLATE_OPTIONS);
  const packed = Buffer.allocUnsafe(deflated.length + 1);
  packed[0] = CURRENT_DICTIONARY;
  deflated.copy(packed, 1);
  return { body: '', packed };
}

/** The body a row was written with; a packed one that cannot be inflated is refused as corrupt. */
export function unpack(runId: string, seq: number | null, body: string, packed: Uint8Array | null): string {
  if (packed === null) return body;
  const refuse = (problem: string) => new StoreRecordError({ code: 'corrupt_record', runId, seq, problem });
  const dictionary = dictionaries.get(packed[0] ?? -1);
  if (dictionary === undefined)
    throw refuse(`packed with dictionary ${String(packed[0])}, which this loopstate does not have`);
  try {
    return inflateRawSync(packed.subarray(1), { dictionary }).toString('utf8');
  } catch (error) {
    throw refuse(`its packed body does not inflate (truncated or overwritten): ${(error as Error).message}`);
  }
}
