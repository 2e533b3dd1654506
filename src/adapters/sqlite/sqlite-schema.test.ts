/**
 * The SQLite file layout stamp (`user_version`) is tied to the schema it stands for: a table, column or index added
 * without the next stamp would leave every stamped file without it (an opening that finds the stamp looks no
 * further). The definitions' fingerprint must be the one recorded for the current stamp.
 */
import { createHash } from 'node:crypto';
import { describe, expect, it } from 'vitest';
import { SQLITE_LEARNING_SCHEMA } from './sqlite-learning.js';
import {
  ADDED_COLUMNS,
  JOURNAL_CHUNKS_INDEX,
  mayStamp,
  SCHEMA_FINGERPRINTS,
  SCHEMA_STAMP,
  SQLITE_LAYOUT_VERSION,
  SQLITE_SCHEMA,
  SQLITE_SCHEMA_FINISH,
  STAMP_BASE,
} from './sqlite-schema.js';

/** Spaces and line breaks do not count (a reflow is no change); every word and symbol of the SQL does. */
const sql = (text: string) => text.replaceAll(/\s+/g, ' ').trim();

/** What SCHEMA_FINGERPRINTS records: sha256 of the definitions an opening makes, its first 16 hex digits. */
function schemaFingerprint(): string {
  const definitions = {
    schema: sql(SQLITE_SCHEMA),
    finish: sql(SQLITE_SCHEMA_FINISH),
    chunks: { keyed: sql(JOURNAL_CHUNKS_INDEX.keyed), indexed: sql(JOURNAL_CHUNKS_INDEX.indexed) },
    added: ADDED_COLUMNS,
    learning: sql(SQLITE_LEARNING_SCHEMA),
  };
  return createHash('sha256').update(JSON.stringify(definitions)).digest('hex').slice(0, 16);
}

describe('the SQLite file layout stamp', () => {
  it('stands for the schema it was recorded with (a change of it needs the next stamp)', () => {
    expect(
      schemaFingerprint(),
      `The SQLite schema definitions changed (SQLITE_SCHEMA, SQLITE_SCHEMA_FINISH, JOURNAL_CHUNKS_INDEX, ADDED_COLUMNS or SQLITE_LEARNING_SCHEMA): bump the stamp. Files stamped ${SQLITE_LAYOUT_VERSION} are opened without a look at their schema and would never get the change. Raise SQLITE_LAYOUT_VERSION in sqlite-schema.ts, record this fingerprint under the new version in SCHEMA_FINGERPRINTS (never edit a recorded one) and note the version in the changelog above SQLITE_SCHEMA. A change that keeps an object's name (an index's condition, a CHECK) also needs an upgrade step: the opening brings a file up to date only by missing names and ADDED_COLUMNS.`,
    ).toBe(SCHEMA_FINGERPRINTS[SQLITE_LAYOUT_VERSION]);
  });

  it('records each version once, the current one last, and stamps that version', () => {
    const versions = Object.keys(SCHEMA_FINGERPRINTS).map(Number);
    expect(Math.max(...versions)).toBe(SQLITE_LAYOUT_VERSION);
    expect(new Set(Object.values(SCHEMA_FINGERPRINTS)).size).toBe(versions.length);
    expect(SCHEMA_STAMP).toEqual({
      keyed: STAMP_BASE + SQLITE_LAYOUT_VERSION * 100 + 1,
      indexed: STAMP_BASE + SQLITE_LAYOUT_VERSION * 100,
    });
    // A 32-bit signed integer, as SQLite keeps user_version.
    expect(SCHEMA_STAMP.keyed).toBeLessThan(2 ** 31);
  });

  it('stamps over 0 or an older stamp of its own only: never an application value, never a later stamp', () => {
    expect(mayStamp(0)).toBe(true);
    expect(mayStamp(STAMP_BASE + 601)).toBe(true);
    // Its own stamp again (another process stamped the file meanwhile): nothing to write.
    expect(mayStamp(SCHEMA_STAMP.keyed)).toBe(false);
    expect(mayStamp(SCHEMA_STAMP.indexed)).toBe(false);
    expect(mayStamp(STAMP_BASE + 801)).toBe(false);
    // Values an application's own migrations keep: small counters, the old 700/701, dates, negatives, loopstate's
    // range's neighbours.
    for (const value of [1, 7, 700, 701, 20_261_207, -1, STAMP_BASE - 1, STAMP_BASE + 10_000, 2 ** 31 - 1])
      expect(mayStamp(value), String(value)).toBe(false);
  });
});
