/**
 * `loopstate verify <loop file> [--json] [--scale]`: proves a loop file's loop is bounded, or prints a
 * counterexample. Exit codes: 0 bounded, 1 a violation was found, 2 bad usage or a file that cannot be loaded
 * (or a state space too large without `--scale`).
 */
import { parseArgs } from 'node:util';
import { LoopConfigError } from '../../index.js';
import { thrownMessage } from '../../internal.js';
import { StateSpaceTooLargeError } from '../verify/explore.js';
import { formatReport, reportJson } from '../verify/format-report.js';
import { resolveForVerify } from '../verify/resolve-for-verify.js';
import { verifyLoopConfig } from '../verify/verify-loop.js';
import { loadLoopFile, LoopFileError } from './load-loop-file.js';
import { createVerifyProgressView } from './verify-progress.js';
import type { CliIo } from './cli-io.js';

export const VERIFY_EXIT = Object.freeze({ bounded: 0, violation: 1, usage: 2 });

export const VERIFY_USAGE = `Usage: loopstate verify <loop file> [--json] [--scale] [--max-states <n>]

Explores every run of the loop exported by <loop file> (its default export: a createLoop(...) result
or a loop config) under abstract outcomes of every model call, tool round and evaluation, with the
loop's own limits, tasks, evaluators and tool access levels. Prints the reachable states and
transitions, transition coverage, every reachable stop reason, the worst-case model calls, tool calls,
tokens and cost implied by the limits and prices, and each invariant violation with a counterexample:
a cycle no budget guard stops, a state that cannot reach TERMINATED, a destructive tool that runs
without approval, a budget crossed by more than one call, a cost budget with an unpriced model,
spend that nothing bounds. With deadlineMs: Infinity it lists the waits nothing bounds in time
(an evaluator with evaluatorTimeoutMs: Infinity, a store's pause, a person's decision).

The loop file is imported to find its loop: its top level runs (with any side effects it has) before
verify can tell whether it exports one.

Options:
  --json              print the report as JSON (schemaVersion 1: file, bounded, model, limits,
                      explored, coverage, stopReasons, worstCase, violations, unboundedWaits,
                      notes; a figure is
                      { value, formula, plusOneCall, run? }, a violation { kind, message,
                      counterexample, cycle? }, a path step { state, outcome, event }; Infinity is
                      written as the string "Infinity")
  --scale             when the exact space is over the state bound, explore it with maxSteps (and
                      maxStepsPerTask, maxToolCalls) scaled down, and say so in the report
  --max-states <n>    the state bound (default 150000)
  -h, --help          show this help

Exit codes:
  0  bounded: no violation
  1  a violation was found (the report names it, with a counterexample)
  2  bad usage, a loop file that cannot be loaded or holds no valid loop, or a space over the bound
     without --scale`;

export async function runVerifyCommand(argv: readonly string[], io: CliIo): Promise<number> {
  let parsed;
  try {
    parsed = parseArgs({
      args: [...argv],
      allowPositionals: true,
      options: {
        json: { type: 'boolean' },
        scale: { type: 'boolean' },
        'max-states': { type: 'string' },
        help: { type: 'boolean', short: 'h' },
      },
    });
  } catch (error) {
    io.err(`loopstate verify: ${thrownMessage(error)}\n\n${VERIFY_USAGE}`);
    return VERIFY_EXIT.usage;
  }
  const { values, positionals } = parsed;
  if (values.help) {
    io.out(VERIFY_USAGE);
    return VERIFY_EXIT.bounded;
  }
  const [file, ...extra] = positionals;
  const maxStates = values['max-states'] === undefined ? undefined : Number(values['max-states']);
  if (
    file === undefined ||
    extra.length > 0 ||
    (maxStates !== undefined && !(Number.isInteger(maxStates) && maxStates > 0))
  ) {
    const problem =
      file === undefined
        ? 'a loop file is required'
        : extra.length > 0
          ? `one loop file at a time (got ${positionals.length})`
          : '--max-states expects a positive whole number';
    io.err(`loopstate verify: ${problem}\n\n${VERIFY_USAGE}`);
    return VERIFY_EXIT.usage;
  }
  let report;
  try {
    const loaded: { loop?: unknown; config?: unknown } = await loadLoopFile(file);
    // The exported loop when there is one, else the exported config (whichever shape the loader reports).
    const { config, limits, notes } = resolveForVerify(loaded.loop ?? loaded.config);
    const progress = createVerifyProgressView(io);
    try {
      report = verifyLoopConfig(config, {
        scale: values.scale === true,
        maxStates,
        limits,
        notes,
        onProgress: progress.onProgress,
      });
    } finally {
      progress.finish();
    }
  } catch (error) {
    if (error instanceof LoopFileError || error instanceof StateSpaceTooLargeError) {
      io.err(`loopstate verify: ${error.message}`);
      return VERIFY_EXIT.usage;
    }
    if (error instanceof LoopConfigError) {
      io.err(
        `loopstate verify: ${file} exports an invalid loop config:\n${error.issues.map((issue) => `  ${issue.path}: ${issue.message}`).join('\n')}`,
      );
      return VERIFY_EXIT.usage;
    }
    throw error;
  }
  io.out(values.json ? reportJson(report, file) : formatReport(report, file));
  return report.bounded ? VERIFY_EXIT.bounded : VERIFY_EXIT.violation;
}
