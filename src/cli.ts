#!/usr/bin/env node
/**
 * The `loopstate` bin: wires `runCli` to the process. Results go to stdout; messages and the live
 * progress view go to stderr, so `--json` output stays parseable.
 */
import { runCli } from './cli/run-cli.js';

process.exitCode = await runCli(process.argv.slice(2), {
  out: (text) => console.log(text),
  err: (text) => console.error(text),
  progress: process.stderr,
});
