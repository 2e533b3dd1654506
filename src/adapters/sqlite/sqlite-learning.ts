/**
 * The SQLite store's learning records: a versioned row per key in the `learning` table, written by
 * compare-and-set. The table is created when a database is opened, so an older database gains it.
 */
import type BetterSqlite3 from 'better-sqlite3';
import type { LearningRow, Store } from '../../contracts/store.js';
import { prepareStatement } from './prepare-statement.js';

/** Run when a database is opened (after the store's own tables). */
export const SQLITE_LEARNING_SCHEMA = `
CREATE TABLE IF NOT EXISTS learning (
  key TEXT PRIMARY KEY,
  body TEXT NOT NULL,
  version INTEGER NOT NULL
) STRICT;
`;

type LearningMethods = Pick<Store, 'readLearning' | 'writeLearning' | 'listLearning' | 'deleteLearning'>;

function prepareLearning(db: BetterSqlite3.Database) {
  return {
    read: prepareStatement(db, 'SELECT body, version FROM learning WHERE key = ?'),
    insert: prepareStatement(db, 'INSERT OR IGNORE INTO learning (key, body, version) VALUES (?, ?, 1)'),
    update: prepareStatement(db, 'UPDATE learning SET body = ?, version = version + 1 WHERE key = ? AND version = ?'),
    list: prepareStatement(db, 'SELECT key, body, version FROM learning ORDER BY key'),
    remove: prepareStatement(db, 'DELETE FROM learning WHERE key = ?'),
  };
}

/** The four learning methods on the database `use()` opens (once, on the first call). */
export function sqliteLearning(use: () => { db: BetterSqlite3.Database }): LearningMethods {
  const statements = new WeakMap<BetterSqlite3.Database, ReturnType<typeof prepareLearning>>();
  const prepared = () => {
    const { db } = use();
    let found = statements.get(db);
    if (found === undefined) statements.set(db, (found = prepareLearning(db)));
    return found;
  };
  return {
    async readLearning(key) {
      return (prepared().read.get(key) as { body: string; version: number } | undefined) ?? null;
    },
    async writeLearning(key, body, expectedVersion) {
      const statements = prepared();
      if (expectedVersion === null) return statements.insert.run(key, body).changes === 1;
      return statements.update.run(body, key, expectedVersion).changes === 1;
    },
    async listLearning() {
      return prepared().list.all() as LearningRow[];
    },
    async deleteLearning(key) {
      return prepared().remove.run(key).changes === 1;
    },
  };
}
