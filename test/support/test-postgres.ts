/**
 * The PostgreSQL of the distributed-mode tests: `LOOPSTATE_TEST_POSTGRES_URL` when set (CI's
 * `.ci/run` starts one), else a throwaway server started here by the same `.ci/postgres.sh` (as
 * root it runs initdb/pg_ctl as the postgres user). Never skips: without either, the tests fail
 * saying how to get one. Each caller gets a fresh database of its own.
 */
import { execFile } from 'node:child_process';
import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';
import pg from 'pg';

const run = promisify(execFile);
const script = join(dirname(fileURLToPath(import.meta.url)), '..', '..', '.ci', 'postgres.sh');
export const POSTGRES_URL_VARIABLE = 'LOOPSTATE_TEST_POSTGRES_URL';

export interface TestPostgres {
  /** A fresh, empty database on the server. */
  url: string;
  /** Drops nothing (the server is throwaway) but stops a server this helper started. */
  stop(): Promise<void>;
}

export async function testPostgres(): Promise<TestPostgres> {
  let serverUrl = process.env[POSTGRES_URL_VARIABLE];
  let stop = async () => undefined;
  if (serverUrl === undefined || serverUrl === '') {
    const dir = mkdtempSync(join(tmpdir(), 'loopstate-pg-'));
    try {
      serverUrl = (await run('bash', [script, 'start', dir], { timeout: 120_000 })).stdout.trim();
    } catch (error) {
      throw new Error(
        `These tests need PostgreSQL and could not start one (${String((error as Error).message).split('\n')[0]}). ` +
          `Set ${POSTGRES_URL_VARIABLE}=postgresql://user@host:port/db, or start a throwaway server with ` +
          `\`bash .ci/postgres.sh start /tmp/loopstate-pg\` (root, with postgresql installed) and export the URL it prints.`,
        { cause: error },
      );
    }
    stop = async () => {
      await run('bash', [script, 'stop', dir]).catch(() => undefined);
    };
  }
  const database = `loopstate_test_${process.pid}_${Math.random().toString(36).slice(2, 8)}`;
  const admin = new pg.Client({ connectionString: serverUrl });
  await admin.connect();
  try {
    await admin.query(`CREATE DATABASE ${database}`);
  } finally {
    await admin.end();
  }
  const url = new URL(serverUrl);
  url.pathname = `/${database}`;
  return { url: url.toString(), stop };
}

/** A server of one's own, to restart (the outage tests): always started here, never the shared one. */
export interface OwnPostgres extends TestPostgres {
  /** `pg_ctl restart -m fast`: every connection is dropped, the server is back on the same port. */
  restart(): Promise<void>;
}

export async function ownPostgres(): Promise<OwnPostgres> {
  const dir = mkdtempSync(join(tmpdir(), 'loopstate-pg-own-'));
  const serverUrl = (await run('bash', [script, 'start', dir], { timeout: 120_000 })).stdout.trim();
  const url = new URL(serverUrl);
  const database = `loopstate_outage_${process.pid}`;
  const admin = new pg.Client({ connectionString: serverUrl });
  await admin.connect();
  try {
    await admin.query(`CREATE DATABASE ${database}`);
  } finally {
    await admin.end();
  }
  url.pathname = `/${database}`;
  return {
    url: url.toString(),
    restart: async () => {
      await run('bash', [script, 'restart', dir], { timeout: 120_000 });
    },
    stop: async () => {
      await run('bash', [script, 'stop', dir]).catch(() => undefined);
    },
  };
}
