/**
 * `loopstate console <loop file> --store <sqlite file | postgres url> [--port N]`: serves the console page
 * of a store's runs on 127.0.0.1 until `stop` aborts (Ctrl-C in the bin).
 */
import { parseArgs } from 'node:util';
import { thrownMessage } from '../../../internal.js';
import { CliError, EXIT_CODES } from '../cli-error.js';
import type { CliIo } from '../cli-io.js';
import { terminalLine } from '../terminal-safe.js';

export const CONSOLE_USAGE = `Usage: loopstate console <loop file> --store <sqlite file | postgres url> [--schema S] [--port N]

Serves a local page of a store's runs on 127.0.0.1: the runs (refreshed as the store changes), each run
in the viewer (read from the store), and the calls waiting for approval and outputs waiting for review,
with their arguments (redacted with the loop's redaction) and approve / reject / accept buttons. A
decision goes through the loop's resume: the same checks, the same typed errors, shown in the page.
The page's URL carries a token made for this launch; a request without it, or naming another host, is
refused. The loop file is the one the runs were started with (continuing a run needs its tools).

Options:
  --store <s>   a SQLite file a loop's sqliteStore wrote, or a postgres:// URL (required)
  --schema <n>  the Postgres schema of the store (default loopstate)
  --port <N>    the port (default: a free one)
  -h, --help    show this help

Exit codes: 0 stopped with Ctrl-C, 1 cannot listen or an unexpected error, 2 bad usage, 3 the loop file
could not be loaded.`;

function parsePort(text: string | undefined): number {
  if (text === undefined) return 0;
  const port = Number(text);
  if (Number.isInteger(port) && port >= 0 && port <= 65_535) return port;
  throw new CliError({
    kind: 'usage',
    message: `--port: expected a port number from 0 to 65535 (0 picks a free one), got ${JSON.stringify(text)}`,
  });
}

/**
 * Runs the console command; resolves with the exit code once `stop` aborted and the server stopped.
 * @example
 * const controller = new AbortController();
 * const exit = consoleCommand(['loop.ts', '--store', 'loops.db'], io, controller.signal);
 */
export async function consoleCommand(argv: readonly string[], io: CliIo, stop: AbortSignal): Promise<number> {
  try {
    let parsed;
    try {
      parsed = parseArgs({
        args: [...argv],
        allowPositionals: true,
        options: {
          store: { type: 'string' },
          schema: { type: 'string' },
          port: { type: 'string' },
          help: { type: 'boolean', short: 'h' },
        },
      });
    } catch (error) {
      throw new CliError({ kind: 'usage', message: `${thrownMessage(error)}\n\n${CONSOLE_USAGE}` });
    }
    if (parsed.values.help) {
      io.out(CONSOLE_USAGE);
      return EXIT_CODES.success;
    }
    const [loopFile, extra] = parsed.positionals;
    if (loopFile === undefined)
      throw new CliError({
        kind: 'usage',
        message: `<loop file>: expected the loop file the runs were started with\n\n${CONSOLE_USAGE}`,
      });
    if (extra !== undefined)
      throw new CliError({
        kind: 'usage',
        message: `unexpected argument ${JSON.stringify(extra)}\n\n${CONSOLE_USAGE}`,
      });
    if (parsed.values.store === undefined)
      throw new CliError({
        kind: 'usage',
        message: `--store: expected a SQLite file path or a postgres:// URL\n\n${CONSOLE_USAGE}`,
      });
    const port = parsePort(parsed.values.port);
    const { openStoredLoop } = await import('../../console/stored-loop.js');
    const { startConsole } = await import('../../console/console-server.js');
    const stored = await openStoredLoop({
      loopFile,
      store: parsed.values.store,
      ...(parsed.values.schema === undefined ? {} : { schema: parsed.values.schema }),
      ...(io.cwd === undefined ? {} : { cwd: io.cwd }),
    });
    let running;
    try {
      running = await startConsole({ stored, port });
    } catch (error) {
      await stored.close();
      const code = (error as NodeJS.ErrnoException).code;
      if (code === 'EADDRINUSE' || code === 'EACCES') {
        io.err(
          `loopstate console: cannot listen on 127.0.0.1:${port} (${code}); choose another --port, or 0 for a free one`,
        );
        return EXIT_CODES.failure;
      }
      throw error;
    }
    io.out(`loopstate console: loop ${terminalLine(stored.loop.name)} on ${terminalLine(stored.storeLabel)}`);
    io.out(`Console: ${running.url}  (Ctrl-C to stop)`);
    if (!stop.aborted)
      await new Promise<void>((resolve) => stop.addEventListener('abort', () => resolve(), { once: true }));
    await running.close();
    await stored.close();
    return EXIT_CODES.success;
  } catch (error) {
    io.err(`loopstate console: ${thrownMessage(error)}`);
    return error instanceof CliError ? error.exitCode : EXIT_CODES.failure;
  }
}
