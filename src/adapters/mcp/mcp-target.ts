/**
 * Where an MCP server is: a command to start (stdio) or a URL (Streamable HTTP, with a fallback to the
 * older HTTP+SSE transport), and the options of a connection. Both are validated before anything
 * starts, with the path of every bad field.
 */
import { z } from 'zod';
import { LoopConfigError } from '../../contracts/errors.js';
import { TOOL_ACCESS_LEVELS, type ToolAccess } from '../../engine/tools/define-tool.js';

/**
 * A server started as a child process and spoken to over its stdin and stdout. `env` is all the
 * server's environment besides a few safe variables (`PATH`, `HOME`, ...): the parent's is not passed on.
 * Every value in `env` is treated as a secret and redacted from everything the loop reports.
 * @example
 * const target: McpStdioTarget = { command: 'npx', args: ['-y', '@modelcontextprotocol/server-everything'], env: { API_TOKEN: token } };
 */
export interface McpStdioTarget {
  command: string;
  args?: readonly string[];
  env?: Readonly<Record<string, string>>;
  cwd?: string;
}

/**
 * A server at a URL, over Streamable HTTP; a server that refuses it with a 4xx (an older one) is tried
 * over HTTP+SSE. Every header value is treated as a secret and redacted from everything the loop reports.
 * @example
 * const target: McpHttpTarget = { url: 'https://mcp.example.com/mcp', headers: { Authorization: `Bearer ${token}` } };
 */
export interface McpHttpTarget {
  url: string | URL;
  headers?: Readonly<Record<string, string>>;
}

/**
 * A stdio command or an HTTP URL.
 * @example
 * const target: McpTarget = { command: 'node', args: ['server.js'] };
 */
export type McpTarget = McpStdioTarget | McpHttpTarget;

/**
 * How the tools of a connection are chosen and made.
 * - `access`: the access level of a tool by its name, over what its annotations say (the server's word).
 * - `include`: only these tools; `exclude`: all but these. A name the server does not offer is an error.
 * - `timeoutMs`: each call's timeout (the loop's default tool timeout when left out).
 * @example
 * await connectMcp(target, { access: { delete_file: 'destructive', search: 'read' }, exclude: ['shell'] });
 */
export interface McpConnectOptions {
  access?: Readonly<Record<string, ToolAccess>>;
  include?: readonly string[];
  exclude?: readonly string[];
  timeoutMs?: number;
}

const MAX_TIMER_MS = 2_147_483_647;
const stringRecord = z.record(z.string(), z.string({ error: 'expected a string' }));

const stdioTargetSchema = z
  .object({
    command: z.string().trim().min(1, 'expected the command that starts the server, e.g. "node"'),
    args: z.array(z.string()).optional(),
    env: stringRecord.optional(),
    cwd: z.string().min(1).optional(),
  })
  .strict();

const httpTargetSchema = z
  .object({
    url: z.union([z.instanceof(URL), z.string()]).transform((value, context) => {
      try {
        const url = new URL(value);
        if (url.protocol === 'http:' || url.protocol === 'https:') return url;
      } catch {
        // Reported below.
      }
      context.addIssue({ code: 'custom', message: 'expected an http:// or https:// URL' });
      return z.NEVER;
    }),
    headers: stringRecord.optional(),
  })
  .strict();

const optionsSchema = z
  .object({
    access: z.record(z.string(), z.enum(TOOL_ACCESS_LEVELS as [ToolAccess, ...ToolAccess[]])).optional(),
    include: z.array(z.string()).optional(),
    exclude: z.array(z.string()).optional(),
    timeoutMs: z.number().int().positive().max(MAX_TIMER_MS).optional(),
  })
  .strict();

export type ParsedTarget =
  | { kind: 'stdio'; command: string; args: string[]; env: Record<string, string>; cwd: string | undefined }
  | { kind: 'http'; url: URL; headers: Record<string, string> };

export type ParsedOptions = z.output<typeof optionsSchema>;

function fail(error: z.ZodError, prefix: string): never {
  throw new LoopConfigError({
    issues: error.issues.map((issue) => ({
      path: [prefix, z.core.toDotPath(issue.path)].filter((part) => part !== '').join('.'),
      message: issue.message,
    })),
    cause: error,
  });
}

/**
 * The target, checked: `{ command, ... }` or `{ url, ... }`.
 * @example
 * parseTarget({ url: 'http://127.0.0.1:3000/mcp' }).kind // 'http'
 */
export function parseTarget(target: unknown): ParsedTarget {
  if (typeof target !== 'object' || target === null || (!('command' in target) && !('url' in target))) {
    throw new LoopConfigError({
      issues: [
        { path: 'target', message: 'expected { command, args?, env?, cwd? } (stdio) or { url, headers? } (HTTP)' },
      ],
    });
  }
  if ('command' in target) {
    const parsed = stdioTargetSchema.safeParse(target);
    if (!parsed.success) fail(parsed.error, 'target');
    const { command, args = [], env = {}, cwd } = parsed.data;
    return { kind: 'stdio', command, args, env, cwd };
  }
  const parsed = httpTargetSchema.safeParse(target);
  if (!parsed.success) fail(parsed.error, 'target');
  return { kind: 'http', url: parsed.data.url, headers: parsed.data.headers ?? {} };
}

/**
 * The options, checked (the tool names they mention are checked against the server's list later).
 * @example
 * parseOptions({ exclude: ['shell'] }).exclude // ['shell']
 */
export function parseOptions(options: unknown): ParsedOptions {
  const parsed = optionsSchema.safeParse(options ?? {});
  if (!parsed.success) fail(parsed.error, 'options');
  if (parsed.data.include !== undefined && parsed.data.exclude !== undefined) {
    throw new LoopConfigError({
      issues: [{ path: 'options.exclude', message: 'give include or exclude, not both' }],
    });
  }
  return parsed.data;
}

/**
 * Names in `access`, `include` and `exclude` that the server does not offer, as config issues.
 * @example
 * unknownToolIssues({ exclude: ['shel'] }, ['shell', 'search']) // [{ path: 'options.exclude.0', message: 'no tool "shel" on the server; it offers: shell, search' }]
 */
export function unknownToolIssues(
  options: ParsedOptions,
  offered: readonly string[],
): { path: string; message: string }[] {
  const known = new Set(offered);
  const message = (name: string) => `no tool "${name}" on the server; it offers: ${offered.join(', ') || '(none)'}`;
  return [
    ...Object.keys(options.access ?? {})
      .filter((name) => !known.has(name))
      .map((name) => ({ path: `options.access.${name}`, message: message(name) })),
    ...(['include', 'exclude'] as const).flatMap((key) =>
      (options[key] ?? []).flatMap((name, index) =>
        known.has(name) ? [] : [{ path: `options.${key}.${index}`, message: message(name) }],
      ),
    ),
  ];
}
