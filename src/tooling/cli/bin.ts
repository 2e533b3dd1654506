#!/usr/bin/env node
/**
 * The `loopstate` bin: wires `runCli` to the process. Results go to stdout; messages and the live
 * progress view go to stderr, so `--json` output stays parseable.
 */
import { EXIT_CODES, NEVER_SETTLED_MESSAGE } from './cli-error.js';
import { runCli } from './run-cli.js';

const argv = process.argv.slice(2);
let finished = false;
// Node ends a process whose event loop is empty even while a top-level await is pending, with exit code 13
// and no word: a run left waiting on a promise nothing can settle any more. Say so, with a documented code.
process.once('beforeExit', () => {
  if (finished) return;
  console.error(`loopstate: ${NEVER_SETTLED_MESSAGE}`);
  if (argv.includes('--json'))
    console.log(
      JSON.stringify(
        { error: { code: 'never_settled', message: NEVER_SETTLED_MESSAGE, exitCode: EXIT_CODES.failure } },
        null,
        2,
      ),
    );
  process.exitCode = EXIT_CODES.failure;
});

process.exitCode = await runCli(argv, {
  out: (text) => console.log(text),
  err: (text) => console.error(text),
  progress: process.stderr,
});
finished = true;
