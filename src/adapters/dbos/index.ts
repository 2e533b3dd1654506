/**
 * `loopstate/dbos`: distributed runs on DBOS Transact and Postgres (optional peers: `npm install @dbos-inc/dbos-sdk@~5.3 pg`),
 * with the store from `loopstate/postgres`: what a worker or an enqueuing service needs.
 */
export { dbosWorker, type DbosWorker, type DbosWorkerOptions } from './dbos-worker.js';
export { dbosClient, type DbosClientOptions, type LoopDbosClient } from './dbos-client.js';
export { machineVersion } from './machine-version.js';
export { DEFAULT_DBOS_WORKER } from '../../engine/constants.js';
export { DbosWorkerError, type DbosWorkerErrorCode } from './dbos-errors.js';
