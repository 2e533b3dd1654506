/**
 * The MCP servers of `loopstate run`: the loop file's `export const mcp = [...]` (each entry a target
 * `{ command, args?, env?, cwd? }` or `{ url, headers? }`, or `[target, options]`) and every
 * `--mcp "<command line>"`. Each is connected before the run, its tools added to the loop's, and closed
 * after it, however the run ends.
 */
import { connectMcp, type McpConnectOptions, type McpConnection, type McpTarget } from '../../adapters/mcp/index.js';
import { thrownMessage } from '../../internal.js';
import { CliError } from './cli-error.js';

/** One server to connect, and where it was named (for the message when it fails). */
export interface McpServerEntry {
  target: McpTarget;
  options: McpConnectOptions;
  source: string;
}

/**
 * A command line split into words as a POSIX shell would for plain words, quotes ('…', "…") and
 * backslash escapes; no variables, globs or pipes (nothing runs through a shell).
 * @example
 * splitCommandLine(`node "my server.js" --name 'a b'`) // ['node', 'my server.js', '--name', 'a b']
 */
export function splitCommandLine(line: string): string[] {
  const words: string[] = [];
  let word = '';
  let inWord = false;
  let quote: '"' | "'" | null = null;
  for (let index = 0; index < line.length; index++) {
    const char = line.charAt(index);
    if (quote === "'") {
      if (char === "'") quote = null;
      else word += char;
    } else if (char === '\\' && index + 1 < line.length && (quote === null || /["\\$`]/.test(line.charAt(index + 1)))) {
      word += line.charAt(++index);
      inWord = true;
    } else if (quote === '"') {
      if (char === '"') quote = null;
      else word += char;
    } else if (char === '"' || char === "'") {
      quote = char;
      inWord = true;
    } else if (/\s/.test(char)) {
      if (inWord) words.push(word);
      word = '';
      inWord = false;
    } else {
      word += char;
      inWord = true;
    }
  }
  if (quote !== null) throw new Error(`unclosed ${quote} quote`);
  if (inWord) words.push(word);
  return words;
}

/**
 * The `--mcp` flags as servers: each value a stdio command line.
 * @example
 * mcpFlagEntries(['node server.js'])[0]?.target // { command: 'node', args: ['server.js'] }
 */
export function mcpFlagEntries(lines: readonly string[]): McpServerEntry[] {
  return lines.map((line) => {
    let words: string[];
    try {
      words = splitCommandLine(line);
    } catch (error) {
      throw new CliError({ kind: 'usage', message: `--mcp "${line}": ${thrownMessage(error)}` });
    }
    const [command, ...args] = words;
    if (command === undefined)
      throw new CliError({ kind: 'usage', message: '--mcp needs the command line of a stdio MCP server' });
    return { target: { command, args }, options: {}, source: `--mcp "${line}"` };
  });
}

/**
 * The loop file's `mcp` export as servers; anything else than a list of targets is the file's to fix.
 * @example
 * mcpExportEntries([{ url: 'http://127.0.0.1:3000/mcp' }], 'loop.ts')
 */
export function mcpExportEntries(exported: unknown, file: string): McpServerEntry[] {
  if (exported === undefined) return [];
  const expected =
    'expected a list of MCP targets: { command, args?, env?, cwd? }, { url, headers? }, or [target, options]';
  if (!Array.isArray(exported)) throw new CliError({ kind: 'loop_file', message: `${file}: export mcp: ${expected}` });
  return exported.map((entry: unknown, index) => {
    const [target, options] = Array.isArray(entry) ? entry : [entry, {}];
    if (typeof target !== 'object' || target === null)
      throw new CliError({ kind: 'loop_file', message: `${file}: export mcp[${index}]: ${expected}` });
    return {
      target: target as McpTarget,
      options: (options ?? {}) as McpConnectOptions,
      source: `${file} mcp[${index}]`,
    };
  });
}

/**
 * Connects every server, or none: when one fails, those already open are closed and the failure is
 * the loop file's (exit code 3), naming the server.
 * @example
 * const connections = await connectServers(entries);
 */
export async function connectServers(entries: readonly McpServerEntry[]): Promise<McpConnection[]> {
  const connections: McpConnection[] = [];
  try {
    for (const entry of entries) {
      try {
        connections.push(await connectMcp(entry.target, entry.options));
      } catch (error) {
        throw new CliError({ kind: 'loop_file', message: `${entry.source}: ${thrownMessage(error)}`, cause: error });
      }
    }
  } catch (error) {
    await closeServers(connections);
    throw error;
  }
  return connections;
}

/** Closes every connection; a close that fails is no reason to lose the run's result. */
export async function closeServers(connections: readonly McpConnection[]): Promise<void> {
  await Promise.all(connections.map((connection) => connection.close().catch(() => undefined)));
}
