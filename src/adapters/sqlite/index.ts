/** `loopstate/sqlite`: the embedded durable store on one SQLite file (an optional peer: `npm install better-sqlite3@~12.11`). */
export { sqliteStore, type SqliteStoreOptions } from './sqlite-store.js';
