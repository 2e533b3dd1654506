import { describe, expect, it } from 'vitest';
import { createLoop, LoopConfigError, memoryStore } from '../../index.js';
import { postgresStore } from '../postgres/index.js';
import { reply, scriptedModel } from '../../testing/index.js';
import { dbosWorker } from './dbos-worker.js';

describe('dbosWorker options', () => {
  it('refuses a misconfiguration before connecting anywhere, naming each bad field', async () => {
    const store = postgresStore({ connectionString: 'postgresql://nobody@127.0.0.1:1/none' });
    const loop = createLoop({ model: scriptedModel([reply('hi')]), store: memoryStore() });
    const refused = await dbosWorker({
      loop,
      store,
      systemDatabaseUrl: 'mysql://x',
      executorId: 'has spaces',
      heartbeatMs: 1_000,
      deadAfterMs: 1_500,
    }).catch((error: unknown) => error);
    expect(refused).toBeInstanceOf(LoopConfigError);
    expect((refused as LoopConfigError).issues.map((issue) => issue.path)).toEqual([
      'systemDatabaseUrl',
      'executorId',
      'deadAfterMs',
    ]);
    await store.close();
  });
});
