/**
 * `loopstate/node`: the parts that need Node's own modules (reading a trace file from disk), kept out of the
 * core so `loopstate` and `loopstate/testing` load in a browser, Bun and Deno. No package to install.
 */
export { readTraceFile } from './read-trace-file.js';
