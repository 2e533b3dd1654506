/**
 * `loopstate inspect <run.jsonl> [--port N] [--run <id>]`: serves the local viewer for a trace and
 * keeps serving until `stop` aborts (the bin aborts it on Ctrl-C).
 */
import { LoopstateError } from '../../../index.js';
import type { TracedRun } from '../../viewer/read-trace.js';
import type { CliIo } from '../cli-io.js';
import { terminalLine } from '../terminal-safe.js';

export interface InspectCommandOptions {
  tracePath: string | undefined;
  port: string | undefined;
  runId: string | undefined;
  /** Aborted to stop the server. */
  stop: AbortSignal;
}

export const INSPECT_EXIT = { success: 0, failure: 1, usage: 2 } as const;

function parsePort(text: string | undefined): number | string {
  if (text === undefined) return 0;
  const port = Number(text);
  return Number.isInteger(port) && port >= 0 && port <= 65_535
    ? port
    : `--port: expected a port number from 0 to 65535 (0 picks a free one), got "${text}"`;
}

/**
 * Runs the inspect command; resolves with the exit code once the server has stopped.
 * @example
 * const controller = new AbortController();
 * const exit = inspectCommand({ tracePath: 'run.jsonl', port: undefined, runId: undefined, stop: controller.signal }, io);
 */
export async function inspectCommand(options: InspectCommandOptions, io: CliIo): Promise<number> {
  if (options.tracePath === undefined) {
    io.err('loopstate inspect: expected the trace file: loopstate inspect <run.jsonl> [--port N]');
    return INSPECT_EXIT.usage;
  }
  const port = parsePort(options.port);
  if (typeof port === 'string') {
    io.err(`loopstate inspect: ${port}`);
    return INSPECT_EXIT.usage;
  }
  // Loaded here, so the other commands never load elkjs.
  const { startViewer } = await import('../../viewer/viewer-server.js');
  const { UNREADABLE_TRACE } = await import('../../viewer/read-trace.js');
  let viewer;
  try {
    viewer = await startViewer({
      tracePath: options.tracePath,
      port,
      ...(options.runId === undefined ? {} : { runId: options.runId }),
    });
  } catch (error) {
    if (error instanceof LoopstateError && error.code === UNREADABLE_TRACE) {
      io.err(`loopstate inspect: ${error.message}`);
      return INSPECT_EXIT.failure;
    }
    const code = (error as NodeJS.ErrnoException).code;
    if (code === 'EADDRINUSE' || code === 'EACCES') {
      io.err(
        `loopstate inspect: cannot listen on 127.0.0.1:${port} (${code}); choose another --port, or 0 for a free one`,
      );
      return INSPECT_EXIT.failure;
    }
    throw error;
  }
  const { timeline, otherRuns, skipped } = viewer;
  // The page shows the rest of the run; the terminal says what it could not read.
  for (const problem of skipped) io.err(`loopstate inspect: ${terminalLine(problem)}`);
  io.out(
    `loopstate inspect: run ${terminalLine(timeline.runId)} (${timeline.steps.length} steps, ${timeline.frames.length - 1} events${timeline.stop ? `, ${terminalLine(timeline.stop.reason)}` : ''})`,
  );
  if (otherRuns.length > 0) io.out(otherRunsText(options.tracePath, otherRuns, options.runId === undefined));
  io.out(`Viewer: ${viewer.url}  (Ctrl-C to stop)`);
  if (!options.stop.aborted)
    await new Promise<void>((resolve) => options.stop.addEventListener('abort', () => resolve(), { once: true }));
  await viewer.close();
  return INSPECT_EXIT.success;
}

/** The file's other runs, one a line, and how to open one; `latest` when the run shown was picked as the file's latest. */
function otherRunsText(tracePath: string, runs: readonly TracedRun[], latest: boolean): string {
  const lines = runs.map(
    (run) =>
      `  ${terminalLine(run.runId)}  (${run.stopReason === null ? 'no run-end' : terminalLine(run.stopReason)}, ${run.events} events)`,
  );
  return [
    `${latest ? `the latest of ${runs.length + 1} runs in this file; the others` : `the other runs in this file`}, in the order they began:`,
    ...lines,
    `open one with: loopstate inspect ${terminalLine(tracePath)} --run <id>`,
  ].join('\n');
}
