#!/usr/bin/env node
/**
 * The `loopstate` bin: wires `runCli` to the process. For now it runs the bundled examples
 * offline; later issues add `run`, `inspect` and `verify`.
 */
import { runCli } from './cli/run-cli.js';

process.exitCode = await runCli(process.argv.slice(2), {
  out: (text) => console.log(text),
  err: (text) => console.error(text),
});
