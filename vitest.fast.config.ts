/**
 * `npm run test:fast`: the suite without the files that start real processes or explore whole state
 * spaces, for daily work. `npm test` (vitest.config.ts) still runs everything; run it before you push.
 * Each entry is one of the slowest files, as measured with `npx vitest run --reporter=verbose`.
 */
import { configDefaults, defineConfig, mergeConfig } from 'vitest/config';
import fullSuite from './vitest.config.js';

/** What test:fast leaves out, and why each is slow. */
const SLOW_TEST_FILES = [
  // Real processes: a browser, a database, child processes started, bundled or killed.
  'test/browser/**', // chromium through playwright-core
  'test/runtimes/**', // the core bundled, then run in chromium, on Bun and on Deno (installed from the registry)
  'test/dbos/**', // a throwaway Postgres and DBOS worker processes
  'test/e2e/**', // the loopstate bin as a child process, run by run
  'test/package/**', // npm pack, then npm install of the tarball into a fresh app (needs the registry)
  'test/stores/contract-postgres.test.ts', // the store contract on a real Postgres, a schema per check (~4 s)
  'test/learning/learning-stores.test.ts', // an older Postgres schema migrated on a real Postgres (~7 s)
  'test/durable/crash.test.ts', // children SIGKILLed at effect boundaries, then resumed by new ones
  'test/integration/trace-kill.test.ts', // a vite-bundled child killed while it writes its trace
  'test/integration/cassette-lock-process.test.ts', // child recorders holding a cassette's lock, killed or exiting
  'test/learning/learning-processes.test.ts', // two child processes learning into one SQLite file, then a third
  'test/learning/learning-cli.test.ts', // the learning command run as the bin in a child process, and on Postgres
  'test/integration/mcp-stdio.test.ts', // an MCP server child process per test, one killed mid-call
  'test/integration/mcp-process-exit.test.ts', // programs that must exit by themselves, their MCP servers with them
  'src/tooling/cli/verify-command.test.ts', // the bin bundled with vite, then `loopstate verify` as a child process
  'src/tooling/cli/commands/inspect.test.ts', // `loopstate inspect` as a child process, until Ctrl-C
  'src/adapters/stately/stately-inspector.test.ts', // a child process that must exit by itself with no inspector listening
  // In-process, but each file takes tens of seconds on its own.
  'test/model-based/replay.test.ts', // every shortest path to a final state, driven through createLoop (~11,700 runs)
  'src/tooling/verify/verify-loop.test.ts', // exhaustive exploration of the examples' state spaces
  'test/docs/doc-snippets.test.ts', // a TypeScript program over every snippet of the README and docs/
];

export default mergeConfig(
  fullSuite,
  defineConfig({
    test: { exclude: [...configDefaults.exclude, ...SLOW_TEST_FILES] },
  }),
);
