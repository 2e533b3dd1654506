/** The Postgres store's learning records: a versioned row per key in `<schema>.learning`, written by compare-and-set. */
import type { LearningRow, Store } from '../../contracts/store.js';

type LearningMethods = Pick<Store, 'readLearning' | 'writeLearning' | 'listLearning' | 'deleteLearning'>;

/** Added to the store's schema when opened, so an older schema gains the table. */
export function postgresLearningSchema(quotedSchema: string): string {
  return `CREATE TABLE IF NOT EXISTS ${quotedSchema}.learning (
  key TEXT PRIMARY KEY,
  body TEXT NOT NULL,
  version INTEGER NOT NULL
);
`;
}

/** The four learning methods over the store's `query` (`safe`: may be sent again after a broken connection). */
export function postgresLearning(
  quotedSchema: string,
  query: (text: string, values?: unknown[], safe?: boolean) => Promise<{ rows: unknown[]; rowCount: number | null }>,
): LearningMethods {
  const table = `${quotedSchema}.learning`;
  return {
    async readLearning(key) {
      const { rows } = await query(`SELECT body, version FROM ${table} WHERE key = $1`, [key]);
      return (rows[0] as { body: string; version: number } | undefined) ?? null;
    },
    async writeLearning(key, body, expectedVersion) {
      // A compare-and-set sent twice would fail the second time after the first committed: never resent.
      if (expectedVersion === null)
        return (
          (
            await query(
              `INSERT INTO ${table} (key, body, version) VALUES ($1, $2, 1) ON CONFLICT (key) DO NOTHING`,
              [key, body],
              false,
            )
          ).rowCount === 1
        );
      return (
        (
          await query(
            `UPDATE ${table} SET body = $1, version = version + 1 WHERE key = $2 AND version = $3`,
            [body, key, expectedVersion],
            false,
          )
        ).rowCount === 1
      );
    },
    async listLearning() {
      // COLLATE "C": the same byte order as the other stores.
      const { rows } = await query(`SELECT key, body, version FROM ${table} ORDER BY key COLLATE "C"`);
      return rows as LearningRow[];
    },
    async deleteLearning(key) {
      return (await query(`DELETE FROM ${table} WHERE key = $1`, [key])).rowCount === 1;
    },
  };
}
