/**
 * Run, journal and snapshot bodies as SQLite stores them: a row of at least `PACK_FROM` characters is deflated
 * against a preset dictionary (record-dictionary.ts) into the `packed` column, its `body` then empty; a
 * shorter one stays text. The first byte of `packed` says how:
 * - a dictionary's number (1–127): this row's body alone, raw deflate against that dictionary;
 * - 128 + a dictionary's number: the first row of a commit group, then the group's body lengths (varints: the
 *   count, then each body's UTF-8 length) and one raw deflate of the bodies one after the other: the journal
 *   rows of one append (but its chunks) are deflated in one call, so zlib's set-up is paid once a commit;
 * - 0 (`GROUP_MEMBER`): a later row of such a group, then how far back its first row is (seq difference) and
 *   its place in the group (varints); its body is read from that first row.
 */
import { deflateRawSync, inflateRawSync } from 'node:zlib';
import type { StoreRow } from '../../contracts/store.js';
import { StoreRecordError } from '../../engine/durable/durable-errors.js';
import { CURRENT_DICTIONARY, RECORD_DICTIONARIES } from './record-dictionary.js';

/** Below this a row stays text: deflating it saves fewer bytes than SQLite's own per-row overhead is worth the time. */
export const PACK_FROM = 200;
const GROUP_HEAD = 128;
const GROUP_MEMBER = 0;
/** Rows each deflated alone (never in a group): a resume reads them without the journal rows around them. */
const ALONE_KINDS: ReadonlySet<string> = new Set(['trace', 'transcript']);

const dictionaries = new Map(
  Object.entries(RECORD_DICTIONARIES).map(([version, text]) => [Number(version), Buffer.from(text, 'utf8')]),
);
const current = dictionaries.get(CURRENT_DICTIONARY)!;
// Level 1: a record deflates to nearly the same size at level 6, in half the time. For a body of a few KB, an
// 8 KiB window (not zlib's 32 KiB) still reaches the dictionary and a memLevel of 6 (not 8) is a quarter of the
// hash table: most of such a deflate is setting those up, and the output is the same size. Its output (a few hundred
// bytes) goes to a buffer of under 4 KiB, which Node takes from its buffer pool: zlib's default 16 KiB is a new
// allocation at every call (~10% of such a deflate). A long body (a trace chunk) deflates faster and smaller with
// zlib's defaults. Any inflater reads them all.
const DEFLATE_OPTIONS = { level: 1, windowBits: 13, memLevel: 6, dictionary: current, chunkSize: 4_032 };
const LONG_BODY = 16_384;
const LONG_DEFLATE_OPTIONS = { level: 1, windowBits: 15, memLevel: 8, dictionary: current };
const deflated = (body: string | Buffer) =>
  deflateRawSync(body, body.length < LONG_BODY ? DEFLATE_OPTIONS : LONG_DEFLATE_OPTIONS);

/** A journal or snapshot row with its columns as stored: its body text, or packed. */
export interface PackedRow {
  seq: number;
  kind: string;
  body: string;
  packed: Uint8Array | null;
}

/** The columns to write for a body: text as is, or packed. */
export function pack(body: string): { body: string; packed: Buffer | null } {
  if (body.length < PACK_FROM) return { body, packed: null };
  return { body: '', packed: withHeader([CURRENT_DICTIONARY], deflated(body)) };
}

/**
 * The rows of one append as stored: the long journal rows (not chunks) deflated together in one group, the
 * chunks each alone, the short rows as text. The rows may come in any order: the group's first row is the one
 * of the smallest seq (a member names how far back it is).
 */
export function packCommit(rows: readonly StoreRow[]): PackedRow[] {
  const grouped = rows
    .filter((row) => row.body.length >= PACK_FROM && !ALONE_KINDS.has(row.kind))
    .sort((a, b) => a.seq - b.seq);
  // Two rows of one seq (refused by the store) could not name their head: each is packed alone.
  if (grouped.length < 2 || grouped.some((row, index) => index > 0 && row.seq === grouped[index - 1]!.seq))
    return rows.map((row) => ({ seq: row.seq, kind: row.kind, ...pack(row.body) }));
  const head = grouped[0]!;
  // Each body's own UTF-8 bytes, one after the other: joining the strings first could pair a body's last lone
  // surrogate with the next one's first into one character, and the lengths would no longer add up. Written into
  // one buffer (the bytes `Buffer.from` gives each body): no buffer a body, nor a copy to join them.
  const lengths = grouped.map((row) => Buffer.byteLength(row.body, 'utf8'));
  const joined = Buffer.allocUnsafe(lengths.reduce((sum, length) => sum + length, 0));
  let offset = 0;
  grouped.forEach((row, index) => {
    offset += joined.write(row.body, offset, lengths[index]!, 'utf8');
  });
  const headPacked = withHeader(
    [GROUP_HEAD + CURRENT_DICTIONARY, ...varints([grouped.length, ...lengths])],
    deflated(joined),
  );
  const place = new Map(grouped.map((row, index) => [row, index]));
  return rows.map((row) => {
    const index = place.get(row);
    if (index === undefined) return { seq: row.seq, kind: row.kind, ...pack(row.body) };
    if (index === 0) return { seq: row.seq, kind: row.kind, body: '', packed: headPacked };
    const member = Buffer.from([GROUP_MEMBER, ...varints([row.seq - head.seq, index])]);
    return { seq: row.seq, kind: row.kind, body: '', packed: member };
  });
}

/** The body a row was written with; a packed one that cannot be inflated is refused as corrupt. */
export function unpack(runId: string, seq: number | null, body: string, packed: Uint8Array | null): string {
  if (packed === null) return body;
  const refuse = refusal(runId, seq);
  if (packed[0] === GROUP_MEMBER || (packed[0] ?? 0) >= GROUP_HEAD)
    throw refuse('a row of a commit group, read without the group: read it with its journal');
  return inflate(refuse, packed[0] ?? -1, packed.subarray(1)).toString('utf8');
}

/**
 * Journal rows as read, each body inflated when first read (a resume needs some of them only). A row of a
 * commit group is read from its group's first row: among `rows` when it is there, else through `readRow`
 * (the group is inflated once, whichever of its rows is read first).
 */
export function unpackRows(
  runId: string,
  rows: readonly PackedRow[],
  readRow: (seq: number) => PackedRow | undefined,
): StoreRow[] {
  const heads = new Map<number, PackedRow | undefined>();
  for (const row of rows) if (row.packed !== null && (row.packed[0] ?? 0) >= GROUP_HEAD) heads.set(row.seq, row);
  // The first rows of groups cut off from `rows` are read now, while the store is open (their bodies stay lazy).
  for (const row of rows) {
    const headSeq = row.packed?.[0] === GROUP_MEMBER ? row.seq - (memberPlace(row.packed)?.back ?? 0) : null;
    if (headSeq !== null && !heads.has(headSeq)) heads.set(headSeq, readRow(headSeq));
  }
  const groups = new Map<number, string[]>();
  const groupBodies = (headSeq: number, member: number): string[] => {
    let bodies = groups.get(headSeq);
    if (bodies === undefined) {
      const head = heads.get(headSeq);
      if (head?.packed === null || head === undefined || (head.packed[0] ?? 0) < GROUP_HEAD)
        throw refusal(runId, member)(`its commit group's first row (seq ${headSeq}) is missing or not a group`);
      bodies = unpackGroup(refusal(runId, headSeq), head.packed);
      groups.set(headSeq, bodies);
    }
    return bodies;
  };
  return rows.map((row) => {
    const { seq, kind, packed } = row;
    if (packed === null) return { seq, kind, body: row.body };
    let body: string | undefined;
    return {
      seq,
      kind,
      get body() {
        body ??= bodyOf(runId, row, groupBodies);
        return body;
      },
    };
  });
}

function bodyOf(runId: string, row: PackedRow, groupBodies: (headSeq: number, member: number) => string[]): string {
  const packed = row.packed!;
  const first = packed[0] ?? -1;
  if (first >= GROUP_HEAD) return groupBodies(row.seq, row.seq)[0]!;
  if (first !== GROUP_MEMBER) return unpack(runId, row.seq, row.body, packed);
  const refuse = refusal(runId, row.seq);
  const place = memberPlace(packed);
  if (place === null || place.back >= row.seq)
    throw refuse('not a valid member of a commit group (its place is out of range)');
  const body = groupBodies(row.seq - place.back, row.seq)[place.index];
  if (body === undefined)
    throw refuse(`its commit group (seq ${row.seq - place.back}) has no body at place ${place.index}`);
  return body;
}

/** Where a group member's body is: how many seqs back its group's first row is, and its place there (null: unreadable). */
function memberPlace(packed: Uint8Array): { back: number; index: number } | null {
  try {
    const [back, index] = readVarints((problem) => new Error(problem), packed, 1, 2).values;
    return back! >= 1 && index! >= 1 ? { back: back!, index: index! } : null;
  } catch {
    return null;
  }
}

function unpackGroup(refuse: (problem: string) => StoreRecordError, packed: Uint8Array): string[] {
  const { values: count, next } = readVarints(refuse, packed, 1, 1);
  const { values: lengths, next: start } = readVarints(refuse, packed, next, count[0]!);
  const joined = inflate(refuse, packed[0]! - GROUP_HEAD, packed.subarray(start));
  const total = lengths.reduce((sum, length) => sum + length, 0);
  if (count[0]! < 2 || total !== joined.length)
    throw refuse(`its commit group inflates to ${joined.length} bytes, not the ${total} its lengths say`);
  const bodies: string[] = [];
  let offset = 0;
  for (const length of lengths) {
    bodies.push(joined.toString('utf8', offset, offset + length));
    offset += length;
  }
  return bodies;
}

function inflate(refuse: (problem: string) => StoreRecordError, dictionaryNumber: number, deflated: Uint8Array) {
  const dictionary = dictionaries.get(dictionaryNumber);
  if (dictionary === undefined)
    throw refuse(`packed with dictionary ${String(dictionaryNumber)}, which this loopstate does not have`);
  try {
    return inflateRawSync(deflated, { dictionary });
  } catch (error) {
    throw refuse(`its packed body does not inflate (truncated or overwritten): ${(error as Error).message}`);
  }
}

const refusal = (runId: string, seq: number | null) => (problem: string) =>
  new StoreRecordError({ code: 'corrupt_record', runId, seq, problem });

function withHeader(header: readonly number[], deflated: Buffer): Buffer {
  const packed = Buffer.allocUnsafe(header.length + deflated.length);
  packed.set(header, 0);
  deflated.copy(packed, header.length);
  return packed;
}

/** Unsigned LEB128: seven bits a byte, low first. */
function varints(values: readonly number[]): number[] {
  const bytes: number[] = [];
  for (let value of values) {
    while (value >= 0x80) {
      bytes.push((value & 0x7f) | 0x80);
      value = Math.floor(value / 0x80);
    }
    bytes.push(value);
  }
  return bytes;
}

function readVarints(
  refuse: (problem: string) => Error,
  bytes: Uint8Array,
  from: number,
  count: number,
): { values: number[]; next: number } {
  const values: number[] = [];
  let at = from;
  for (let read = 0; read < count; read++) {
    let value = 0;
    let scale = 1;
    for (;;) {
      const byte = bytes[at++];
      if (byte === undefined || scale > 2 ** 42) throw refuse('its packed header is cut short or overwritten');
      value += (byte & 0x7f) * scale;
      scale *= 0x80;
      if (byte < 0x80) break;
    }
    values.push(value);
  }
  return { values, next: at };
}
