/** The learning records of `memoryStore`: a versioned row per key, written by compare-and-set. */
import type { LearningRow, Store } from '../../contracts/store.js';

type LearningMethods = Pick<Store, 'readLearning' | 'writeLearning' | 'listLearning' | 'deleteLearning'>;

/** The four learning methods over one in-memory map; `clear` empties it (the store's `close`). */
export function memoryLearning(): LearningMethods & { clear(): void } {
  const records = new Map<string, { body: string; version: number }>();
  return {
    async readLearning(key) {
      const record = records.get(key);
      return record ? { ...record } : null;
    },
    async writeLearning(key, body, expectedVersion) {
      const current = records.get(key);
      if ((current?.version ?? null) !== expectedVersion) return false;
      records.set(key, { body, version: (current?.version ?? 0) + 1 });
      return true;
    },
    async listLearning(): Promise<LearningRow[]> {
      return [...records]
        .map(([key, record]) => ({ key, ...record }))
        .sort((left, right) => (left.key < right.key ? -1 : left.key > right.key ? 1 : 0));
    },
    async deleteLearning(key) {
      return records.delete(key);
    },
    clear() {
      records.clear();
    },
  };
}
