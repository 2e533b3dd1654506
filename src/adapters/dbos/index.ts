/**
 * `loopstate/dbos`: distributed runs on DBOS Transact and Postgres. The same names are exported from
 * `loopstate` too; this entry gathers what a worker or an enqueuing service needs.
 */
export { dbosWorker, type DbosWorker, type DbosWorkerOptions } from './dbos-worker.js';
export { dbosClient, type DbosClientOptions, type LoopDbosClient } from './dbos-client.js';
export { machineVersion } from './machine-version.js';
export { postgresStore, type PostgresStore, type PostgresStoreOptions } from '../postgres/postgres-store.js';
