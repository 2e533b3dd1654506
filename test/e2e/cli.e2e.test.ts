/**
 * The `loopstate` bin end to end, as real child processes on the built `dist/` (built once here, so a
 * fresh clone needs nothing but `npm ci`): exit codes, stdout and stderr, the trace file, `--json` shapes,
 * TypeScript and JavaScript loop files, record then replay, and the error cases.
 */
import { execFile } from 'node:child_process';
import { existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync, symlinkSync, writeFileSync } from 'node:fs';
import { createServer } from 'node:net';
import { tmpdir } from 'node:os';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { createRequire } from 'node:module';
import { promisify } from 'node:util';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { RunResult } from '../../src/engine/runtime/run-result.js';
import { replyStep } from '../support/openai-fixtures.js';
import { startOpenAIServer } from '../support/openai-server.js';
import { traceEventSchema } from '../../src/contracts/trace-schema.js';
import { cacheFolderBeside } from '../../src/tooling/cli/code-cached-require.js';
import { transpiledFile } from '../../src/tooling/cli/transpile-cache.js';

const run = promisify(execFile);
const repoRoot = resolve(dirname(fileURLToPath(import.meta.url)), '../..');
const bin = join(repoRoot, 'dist', 'src', 'tooling', 'cli', 'bin.js');
let directory: string;

beforeAll(async () => {
  // The bin is the compiled one; build it as a clean clone would (`npm ci` runs the same via `prepare`).
  await run(
    process.execPath,
    [join(repoRoot, 'node_modules', 'typescript', 'bin', 'tsc'), '-p', join(repoRoot, 'tsconfig.build.json')],
    { cwd: repoRoot },
  );
  directory = mkdtempSync(join(tmpdir(), 'loopstate-e2e-'));
  // A user's project: loopstate and zod installed, so loop files import them by name.
  mkdirSync(join(directory, 'node_modules'));
  symlinkSync(repoRoot, join(directory, 'node_modules', 'loopstate'), 'dir');
  symlinkSync(join(repoRoot, 'node_modules', 'zod'), join(directory, 'node_modules', 'zod'), 'dir');
  writeFileSync(join(directory, 'package.json'), JSON.stringify({ name: 'my-project', type: 'module', private: true }));
}, 120_000);

afterAll(() => {
  if (directory) rmSync(directory, { recursive: true, force: true });
});

interface Outcome {
  code: number;
  stdout: string;
  stderr: string;
}

async function loopstate(args: string[], env: Record<string, string | undefined> = {}): Promise<Outcome> {
  const childEnv: Record<string, string | undefined> = { ...process.env, OPENAI_API_KEY: undefined, ...env };
  for (const key of Object.keys(childEnv)) if (childEnv[key] === undefined) delete childEnv[key];
  try {
    const { stdout, stderr } = await run(process.execPath, [bin, ...args], {
      cwd: directory,
      env: childEnv as NodeJS.ProcessEnv,
      timeout: 30_000,
    });
    return { code: 0, stdout, stderr };
  } catch (error) {
    const failed = error as { code?: number; stdout?: string; stderr?: string };
    if (typeof failed.code !== 'number') throw error;
    return { code: failed.code, stdout: failed.stdout ?? '', stderr: failed.stderr ?? '' };
  }
}

const write = (name: string, text: string) => {
  writeFileSync(join(directory, name), text);
  return name;
};

const readTrace = (file: string) =>
  readFileSync(join(directory, file), 'utf8')
    .trim()
    .split('\n')
    .map((line) => traceEventSchema.parse(JSON.parse(line)));

describe('loopstate run on the bundled examples', () => {
  it('runs the flagship offline: progress on stderr, the report on stdout, the trace in .loopstate/runs', async () => {
    const { code, stdout, stderr } = await loopstate(['run', 'order-status']);
    expect(code).toBe(0);
    expect(stderr).toContain('step 1/4 [main] tool call get_order_status {"order_id":"101"}');
    expect(stderr).toContain(
      '  retry 1 · get_order_status: argument repair (order_id: expected an order id like O-100), sent back to the model\n',
    );
    expect(stderr).toContain('  tool get_order_status → ok');
    expect(stdout).toContain('stop reason: completed: every task finished with an answer');
    expect(stdout).toContain('steps:       3 of 4; retries: 1 argument repair');
    const traceFile = /trace: {7}(\S+\.jsonl)/.exec(stdout)?.[1];
    expect(traceFile).toMatch(/^\.loopstate\/runs\/run_\w+\.jsonl$/);
    expect(stdout).toContain(`open it with: loopstate inspect ${traceFile}`);
    const events = readTrace(traceFile ?? '');
    expect(events[0]?.type).toBe('run-start');
    expect(events.find((event) => event.type === 'retry')).toMatchObject({
      layer: 'argument_repair',
      argumentErrors: [{ name: 'get_order_status', error: 'order_id: expected an order id like O-100' }],
    });
    expect(events.at(-1)).toMatchObject({ type: 'run-end', stopReason: 'completed', steps: 3 });
  });

  it('keeps `loopstate example` as an alias, and --json prints only JSON on stdout', async () => {
    const { code, stdout, stderr } = await loopstate([
      'example',
      'tool-feedback',
      '--json',
      '--trace',
      'feedback.jsonl',
    ]);
    expect(code).toBe(0);
    expect(stderr).toContain('circuit knowledge_base: open after 2 failures in a row');
    const printed = JSON.parse(stdout) as {
      target: string;
      model: string;
      traceFile: string;
      toolHealth: { tools: { name: string; successRate: number; weight: number; circuit: string }[] };
      result: RunResult;
    };
    expect(printed).toMatchObject({
      target: 'tool-feedback',
      model: 'offline, scripted model',
      traceFile: 'feedback.jsonl',
      result: { status: 'succeeded', stopReason: 'completed', steps: 14 },
    });
    expect(printed.toolHealth.tools.find((tool) => tool.name === 'knowledge_base')).toMatchObject({
      successRate: 1 / 3,
      weight: 0.5,
      circuit: 'half_open',
    });
    expect(readTrace('feedback.jsonl')).toHaveLength(printed.result.trace.length);
  });

  it('prints the tool summary table for tool-feedback and nothing on stderr with --quiet', async () => {
    const { code, stdout, stderr } = await loopstate(['run', 'tool-feedback', '--quiet']);
    expect(code).toBe(0);
    expect(stderr).toBe('');
    expect(stdout).toMatch(/knowledge_base {4}\s+3 {6}33% {8}240 ms {4}0\.50 {2}half-open/);
    expect(stdout).toContain(
      'offered next, in this order: calculator, time_service, knowledge_archive, knowledge_base',
    );
  });

  it('records a run to a cassette and replays it offline to the same result', async () => {
    const recorded = await loopstate(['run', 'weekly-report', '--record', 'weekly.cassette.json', '--json', '--quiet']);
    expect(recorded.code).toBe(0);
    expect(existsSync(join(directory, 'weekly.cassette.json'))).toBe(true);
    const replayed = await loopstate(['run', 'weekly-report', '--replay', 'weekly.cassette.json', '--json', '--quiet']);
    expect(replayed.code).toBe(0);
    const [first, second] = [recorded, replayed].map(
      (outcome) => JSON.parse(outcome.stdout) as { model: string; result: RunResult },
    );
    expect(first?.model).toBe('offline, scripted model, recording to weekly.cassette.json');
    expect(second?.model).toBe('replaying weekly.cassette.json');
    const same = (result: RunResult | undefined) =>
      result && {
        status: result.status,
        stopReason: result.stopReason,
        detail: result.detail,
        output: result.output,
        usage: result.usage,
        steps: result.steps,
        warnings: result.warnings,
      };
    expect(same(second?.result)).toEqual(same(first?.result));
    expect(second?.result.steps).toBe(5);
  });

  it('exits 1 with the partial result when a run fails, and 4 for a cassette that is not there', async () => {
    const missing = await loopstate(['run', 'order-status', '--replay', 'nope.json']);
    expect(missing.code).toBe(4);
    expect(missing.stderr).toMatch(/^loopstate run: .*nope\.json/);
  });
});

describe('loopstate run on loop files', () => {
  it('runs a TypeScript loop file without a build step (types stripped, sibling .ts imported as .js)', async () => {
    write(
      'helpers.ts',
      `export interface Greeting { text: string }\nexport const greeting: Greeting = { text: 'Hello from TypeScript' };\n`,
    );
    write(
      'my-loop.ts',
      `import { z } from 'zod';
import { createLoop, defineTool, type LoopConfig } from 'loopstate';
import { reply, scriptedModel, toolCall } from 'loopstate/testing';
import { greeting, type Greeting } from './helpers.js';

const hello = defineTool({ name: 'hello', description: 'Says hello.', input: z.object({ name: z.string() }), access: 'read', execute: ({ name }): Greeting => ({ text: \`\${greeting.text}, \${name}\` }) });
const config: LoopConfig = { model: scriptedModel([toolCall('hello', { name: 'Ada' }), reply('Said hello.')]), tools: [hello], limits: { maxSteps: 3 } };
export const goal: string = 'Greet Ada';
export default createLoop(config);
`,
    );
    const { code, stdout, stderr } = await loopstate(['run', 'my-loop.ts']);
    expect(stderr).toContain('step 1/3 [main] tool call hello {"name":"Ada"}');
    expect(code).toBe(0);
    expect(stdout).toContain('loopstate run: my-loop.ts (model scripted)');
    expect(stdout).toContain('output:      "Said hello."');
  });

  // Node 20's hooks only: Node 22.6+ strips types itself, which runs neither enums nor extensionless imports.
  it.skipIf(Boolean((process.features as { typescript?: unknown }).typescript))(
    'verifies a TypeScript loop file of every kind that loads (import type, enum, siblings as .js, .ts or bare), its transpile kept',
    async () => {
      write(
        'helpers.ts',
        `export interface Greeting { text: string }\nexport const greeting: Greeting = { text: 'Hello' };\n`,
      );
      write('levels.ts', 'export enum Level { Low = 1, High = 3 }\nexport type Named = { name: string };\n');
      write('steps.ts', 'export const steps = (level: number): number => level + 1;\n');
      write(
        'kinds-loop.ts',
        `import type { LoopConfig } from 'loopstate';
import { createLoop, defineTool } from 'loopstate';
import { reply, scriptedModel } from 'loopstate/testing';
import { z } from 'zod';
import { Level, type Named } from './levels';
import { steps } from './steps.ts';
import { greeting } from './helpers.js';

const who: Named = { name: greeting.text };
const look = defineTool({ name: 'look', description: who.name, input: z.object({}), access: 'read', execute: () => 'seen' });
const config: LoopConfig = { model: scriptedModel([reply('done')]), tools: [look], limits: { maxSteps: steps(Level.High) } };
export default createLoop(config);
`,
      );
      const { code, stdout, stderr } = await loopstate(['verify', 'kinds-loop.ts']);
      expect(stderr).toBe('');
      expect(code).toBe(0);
      expect(stdout).toContain('bounded: no run goes on for ever');
      // Each file was transpiled by the CLI's hooks, and what they made is kept beside typescript.
      const typescriptPath = createRequire(join(repoRoot, 'package.json')).resolve('typescript');
      for (const name of ['kinds-loop.ts', 'levels.ts', 'steps.ts', 'helpers.ts']) {
        const kept = transpiledFile({
          folder: cacheFolderBeside(typescriptPath) as string,
          typescriptPath,
          fileName: join(directory, name),
          sourceMaps: false,
          source: readFileSync(join(directory, name), 'utf8'),
        });
        expect(readFileSync(kept, 'utf8'), name).not.toContain(': Named');
      }
    },
  );

  it("runs the repo's own example as a TypeScript loop file, its sources transpiled on import", async () => {
    const { code, stdout } = await loopstate([
      'run',
      join(repoRoot, 'examples', 'order-status.ts'),
      '--quiet',
      '--trace',
      'repo-example.jsonl',
    ]);
    expect(code).toBe(0);
    expect(stdout).toContain('steps:       3 of 4; retries: 1 argument repair');
  });

  it('runs a JavaScript loop file that exports a config, with --goal overriding its goal', async () => {
    write(
      'config-loop.mjs',
      `import { reply, scriptedModel } from 'loopstate/testing';\nexport default { model: scriptedModel([reply('done')]) };\n`,
    );
    const { code, stdout } = await loopstate(['run', 'config-loop.mjs', '--goal', 'Do it', '--json', '--quiet']);
    expect(code).toBe(0);
    const printed = JSON.parse(stdout) as { result: RunResult };
    expect(printed.result.trace[0]).toMatchObject({
      type: 'run-start',
      goalSummary: expect.stringContaining('Do it') as unknown,
    });
  });

  const files: Record<string, string> = {
    'no-loop.mjs': 'export const goal = "x";\nexport default 42;\n',
    'no-goal.mjs': `import { reply, scriptedModel } from 'loopstate/testing';\nexport default { model: scriptedModel([reply('x')]) };\n`,
    'broken.ts': "const at: string = 'import';\nthrow new Error(`boom at ${at}`);\n",
    'bad-config.mjs': `import { scriptedModel } from 'loopstate/testing';\nexport const goal = 'x';\nexport default { model: scriptedModel([]), limits: { maxStep: 3 } };\n`,
  };
  it.each([
    ['a missing file', ['run', 'missing-loop.ts'], 3, 'loopstate run: no such loop file: '],
    [
      'a module without a loop',
      ['run', 'no-loop.mjs'],
      3,
      'no-loop.mjs has no loop: its default export must be a createLoop(...) result or a loop config (the default export is a number (42))',
    ],
    ['a loop without a goal', ['run', 'no-goal.mjs'], 3, 'exports no goal; add `export const goal'],
    ['a file that cannot be imported', ['run', 'broken.ts'], 3, 'broken.ts could not be imported: boom at import'],
    ['an invalid config', ['run', 'bad-config.mjs'], 3, 'limits.maxStep: unknown option; did you mean "maxSteps"?'],
    [
      'a missing API key',
      ['run', 'order-status', '--model', 'openai:gpt-4.1-mini'],
      4,
      'the API key variable OPENAI_API_KEY is not set',
    ],
    ['an unknown example', ['run', 'billing'], 2, 'unknown example "billing"'],
  ])('explains %s and exits with its code', async (_case, args, exitCode, message) => {
    const file = args[1] ?? '';
    if (Object.hasOwn(files, file)) write(file, files[file] ?? '');
    const { code, stderr } = await loopstate(args);
    expect(stderr).toContain(message);
    expect(code).toBe(exitCode);
  });

  it('prints errors as JSON on stdout too with --json', async () => {
    const { code, stdout } = await loopstate(['run', 'missing-loop.ts', '--json']);
    expect(code).toBe(3);
    expect(JSON.parse(stdout)).toEqual({
      error: { code: 'cli_loop_file', message: 'no such loop file: missing-loop.ts', exitCode: 3 },
    });
  });

  it('says when the model server cannot be reached', async () => {
    const port = await closedPort();
    const { code, stdout } = await loopstate([
      'run',
      'order-status',
      '--model',
      'openai:gpt-4.1-mini',
      '--base-url',
      `http://127.0.0.1:${port}/v1`,
      '--quiet',
    ]);
    expect(code).toBe(1);
    expect(stdout).toMatch(/stop reason: (retries_exhausted|fatal_error)/);
    expect(stdout).toContain(`hint:        could not connect to the model server at http://127.0.0.1:${port}/v1`);
  });
});

describe('loopstate run never ends outside its documented exit codes', () => {
  /** A loop file whose evaluator never settles (a real pending promise), with the deadline switched off. */
  const hanging = (limits: string) => `import { createLoop } from 'loopstate';
import { reply, scriptedModel } from 'loopstate/testing';
const ticketService = { name: 'ticket-service', kind: 'rule', evaluate: () => new Promise(() => {}) };
export const goal = 'Answer.';
export default createLoop({ model: scriptedModel([reply('the answer')]), evaluate: ticketService, limits: ${limits} });
`;

  it('stops a run whose evaluator never settles after limits.evaluatorTimeoutMs, with the deadline off: exit 1 and the report', async () => {
    write('slow-evaluator.mjs', hanging('{ deadlineMs: Infinity, evaluatorTimeoutMs: 200 }'));
    const { code, stdout } = await loopstate(['run', 'slow-evaluator.mjs', '--quiet']);
    expect(code).toBe(1);
    expect(stdout).toContain('stop reason: fatal_error');
    expect(stdout).toContain('evaluator "ticket-service" did not settle within limits.evaluatorTimeoutMs (200 ms)');
  });

  it('says so and exits 1 (not 13, silently) when the run waits on a promise nothing can settle, with --json too', async () => {
    write('hanging-evaluator.mjs', hanging('{ deadlineMs: Infinity, evaluatorTimeoutMs: Infinity }'));
    const text = await loopstate(['run', 'hanging-evaluator.mjs', '--quiet']);
    expect(text.code).toBe(1);
    expect(text.stderr).toContain(
      'loopstate: the command cannot finish: it waits on a promise that nothing can settle any more',
    );
    const json = await loopstate(['run', 'hanging-evaluator.mjs', '--quiet', '--json']);
    expect(json.code).toBe(1);
    expect(JSON.parse(json.stdout)).toEqual({
      error: {
        code: 'never_settled',
        message: expect.stringContaining('limits.evaluatorTimeoutMs') as unknown,
        exitCode: 1,
      },
    });
  });
});

describe('loopstate run on a real OpenAI-compatible server (local, over HTTP)', () => {
  const answer = { order_id: 'O-101', status: 'shipped', answer: 'Order O-101 has shipped.' };
  const script = (stream: boolean) => [
    replyStep('chat', stream, {
      toolCalls: [{ id: 'call_1', name: 'get_order_status', args: { order_id: 'O-101' } }],
      usage: { input: 150, output: 20 },
    }),
    replyStep('chat', stream, { text: JSON.stringify(answer), usage: { input: 210, output: 30 } }),
  ];

  it('runs the example on --model with the key from --api-key-env, records it, and replays it offline to the same result', async () => {
    const server = await startOpenAIServer();
    try {
      server.enqueue(...script(false));
      const live = await loopstate(
        [
          'run',
          'order-status',
          '--model',
          'openai:gpt-4.1-mini',
          '--base-url',
          server.baseURL,
          '--api-key-env',
          'MY_KEY',
          '--record',
          'live.cassette.json',
          '--json',
        ],
        { MY_KEY: 'sk-test-123' },
      );
      expect(live.code).toBe(0);
      expect(server.requests).toHaveLength(2);
      expect(server.requests[0]?.headers.authorization).toBe('Bearer sk-test-123');
      expect(live.stderr).toContain('run run_');
      expect(live.stderr).toContain('model gpt-4.1-mini');
      const recorded = JSON.parse(live.stdout) as { model: string; result: RunResult };
      expect(recorded.model).toBe(`openai:gpt-4.1-mini at ${server.baseURL}, recording to live.cassette.json`);
      expect(recorded.result).toMatchObject({
        status: 'succeeded',
        stopReason: 'completed',
        steps: 2,
        output: answer,
        usage: { inputTokens: 360, outputTokens: 50, modelCalls: 2, toolCalls: 1 },
      });
      expect(live.stdout).not.toContain('sk-test-123');

      const replayed = await loopstate(['run', 'order-status', '--replay', 'live.cassette.json', '--json', '--quiet']);
      expect(replayed.code).toBe(0);
      expect(server.requests).toHaveLength(2);
      const again = (JSON.parse(replayed.stdout) as { result: RunResult }).result;
      expect({ ...again, runId: '', trace: [], messages: [] }).toEqual({
        ...recorded.result,
        runId: '',
        trace: [],
        messages: [],
      });
    } finally {
      await server.close();
    }
  });

  it('streams with --stream', async () => {
    const server = await startOpenAIServer();
    try {
      server.enqueue(...script(true));
      const { code, stdout } = await loopstate([
        'run',
        'order-status',
        '--model',
        'openai:gpt-4.1-mini',
        '--base-url',
        server.baseURL,
        '--stream',
        '--json',
        '--quiet',
      ]);
      expect(code).toBe(0);
      expect(server.requests[0]?.body).toMatchObject({ stream: true });
      expect((JSON.parse(stdout) as { result: RunResult }).result.output).toEqual(answer);
    } finally {
      await server.close();
    }
  });
});

describe('loopstate run with MCP servers', () => {
  const server = join(repoRoot, 'test', 'fixtures', 'mcp-stdio-server.mjs');
  const events = () => {
    const file = join(directory, 'mcp-events.log');
    return existsSync(file) ? readFileSync(file, 'utf8').split('\n').filter(Boolean) : [];
  };

  it("adds the tools of the loop file's `export const mcp` targets, and closes the servers at the end", async () => {
    rmSync(join(directory, 'mcp-events.log'), { force: true });
    write(
      'mcp-loop.mjs',
      [
        "import { reply, scriptedModel, toolCall } from 'loopstate/testing';",
        `export const mcp = [[{ command: process.execPath, args: [${JSON.stringify(server)}], env: { MCP_EVENTS: 'mcp-events.log', ORDER_DESK_TOKEN: 'odt_e2e_0123456789' } }, { include: ['get_order', 'whoami'] }]];`,
        "export const goal = 'Where is O-101?';",
        "export default { model: scriptedModel([toolCall('get_order', { order_id: 'O-101' }), toolCall('whoami', {}), reply('Shipped.')]) };",
      ].join('\n'),
    );
    const { code, stdout, stderr } = await loopstate(['run', 'mcp-loop.mjs', '--json', '--quiet']);
    expect(code).toBe(0);
    expect(stderr).toBe('');
    const printed = JSON.parse(stdout) as { result: RunResult };
    expect(printed.result.stopReason).toBe('completed');
    expect(
      printed.result.messages.filter((message) => message.role === 'tool').map((message) => message.content),
    ).toEqual(['O-101 has shipped', 'running with token [redacted]']);
    expect(stdout).not.toContain('odt_e2e_0123456789');
    expect(events()).toEqual(['called:get_order:O-101', 'called:whoami', 'stdin-closed']);
  });

  it('adds the tools of a --mcp stdio command line; a destructive one stops the run for approval (exit 1)', async () => {
    rmSync(join(directory, 'mcp-events.log'), { force: true });
    write(
      'mcp-refund.mjs',
      [
        "import { reply, scriptedModel, toolCall } from 'loopstate/testing';",
        "export const goal = 'Refund O-7';",
        "export default { model: scriptedModel([toolCall('refund_order', { order_id: 'O-7', reason: 'late' }), reply('Refunded.')]) };",
      ].join('\n'),
    );
    const { code, stdout, stderr } = await loopstate([
      'run',
      'mcp-refund.mjs',
      '--mcp',
      `"${process.execPath}" '${server}'`,
      '--json',
      '--quiet',
    ]);
    expect(code).toBe(1);
    // The connection's warnings are said on stderr: this server has a tool no provider accepts by its name.
    expect(stderr).toContain('loopstate run: warning: the MCP tool "orders.export" is left out');
    const printed = JSON.parse(stdout) as { result: RunResult };
    expect(printed.result.status).toBe('needs_human');
    expect(printed.result.pendingApprovals).toEqual([expect.objectContaining({ tool: 'refund_order' })]);
  });

  it('exits 3 naming the server when an MCP server cannot start, and 2 for an unclosed quote', async () => {
    write(
      'mcp-none.mjs',
      "import { reply, scriptedModel } from 'loopstate/testing';\nexport const goal = 'x';\nexport default { model: scriptedModel([reply('x')]) };\n",
    );
    const missing = await loopstate(['run', 'mcp-none.mjs', '--mcp', 'loopstate-no-such-mcp-server --stdio']);
    expect(missing.code).toBe(3);
    expect(missing.stderr).toContain(
      '--mcp "loopstate-no-such-mcp-server --stdio": could not connect to the MCP server',
    );
    const unclosed = await loopstate(['run', 'mcp-none.mjs', '--mcp', 'node "server.js']);
    expect(unclosed.code).toBe(2);
    expect(unclosed.stderr).toContain('unclosed " quote');
  });
});

describe('the package entries', () => {
  it('resolves loopstate and its subpaths by name (as a user imports them), each name from one entry, without loading DBOS until a worker starts', async () => {
    const script = [
      "const [main, testing, dbos, postgres] = await Promise.all([import('loopstate'), import('loopstate/testing'), import('loopstate/dbos'), import('loopstate/postgres')]);",
      "const loaded = Object.keys((await import('node:module')).createRequire(import.meta.url).cache).some((path) => path.includes('@dbos-inc'));",
      'console.log(JSON.stringify({ main: typeof main.createLoop, testing: typeof testing.scriptedModel, dbos: Object.keys(dbos).sort(), postgres: Object.keys(postgres), inMain: "dbosWorker" in main || "postgresStore" in main, loaded }));',
    ].join('\n');
    const { stdout } = await run(process.execPath, ['--input-type=module', '-e', script], { cwd: repoRoot });
    expect(JSON.parse(stdout)).toEqual({
      main: 'function',
      testing: 'function',
      dbos: ['DEFAULT_DBOS_WORKER', 'DbosWorkerError', 'dbosClient', 'dbosWorker', 'machineVersion'],
      postgres: ['postgresStore'],
      inMain: false,
      loaded: false,
    });
  });
});

describe('loopstate --help', () => {
  it.each([[['--help']], [['run', '--help']], [['example', '--help']]])(
    'prints help for %j and exits 0',
    async (args) => {
      const { code, stdout } = await loopstate(args);
      expect(code).toBe(0);
      expect(stdout).toMatch(/^Usage: loopstate/);
    },
  );
});

/** A port nothing listens on: bound, then released. */
function closedPort(): Promise<number> {
  return new Promise((resolvePort, reject) => {
    const server = createServer();
    server.once('error', reject);
    server.listen(0, '127.0.0.1', () => {
      const address = server.address();
      server.close(() =>
        typeof address === 'object' && address !== null ? resolvePort(address.port) : reject(new Error('no port')),
      );
    });
  });
}
