/** `loopstate/postgres`: the durable store on PostgreSQL, shared by processes and hosts (an optional peer: `npm install pg`). */
export { postgresStore, type PostgresStore, type PostgresStoreOptions } from './postgres-store.js';
