#!/usr/bin/env node
/**
 * `loopstate` command line. For now it runs the bundled examples offline; later issues add
 * `run`, `inspect` and `verify`.
 */
import { readFileSync } from 'node:fs';
import { parseArgs } from 'node:util';
import { formatResult } from '../examples/order-status.js';
import type { RunResult } from './runtime/run-result.js';

const EXAMPLES: Record<string, () => Promise<RunResult>> = {
  'order-status': async () => {
    const { createOrderLoop, offlineOrderModel } = await import('../examples/order-status.js');
    return createOrderLoop(offlineOrderModel()).run({ goal: 'What is the status of order O-101?' });
  },
  'weekly-report': async () => {
    const { createWeeklyReportLoop, offlineWeeklyReportModel } = await import('../examples/weekly-report.js');
    return createWeeklyReportLoop(offlineWeeklyReportModel()).run({ goal: '生成本周技术周报' });
  },
};

const USAGE = `Usage: loopstate <command>

Commands:
  example [name]     run a bundled example offline on the scripted model (default: order-status)
                     names: ${Object.keys(EXAMPLES).join(', ')}
Options:
  --json             print the full result (with trace) as JSON
  -h, --help         show this help
  -v, --version      print the version`;

function version(): string {
  const manifest = JSON.parse(readFileSync(new URL('../../package.json', import.meta.url), 'utf8')) as { version: string };
  return manifest.version;
}

async function main(argv: string[]): Promise<number> {
  const { values, positionals } = parseArgs({
    args: argv,
    allowPositionals: true,
    options: { json: { type: 'boolean' }, help: { type: 'boolean', short: 'h' }, version: { type: 'boolean', short: 'v' } },
  });
  if (values.version) return console.log(version()), 0;
  const [command, name = 'order-status'] = positionals;
  if (values.help || command === undefined) return console.log(USAGE), values.help ? 0 : 2;
  if (command !== 'example') return console.error(`loopstate: unknown command "${command}"\n\n${USAGE}`), 2;
  const example = EXAMPLES[name];
  if (!example) return console.error(`loopstate: unknown example "${name}"; choose one of: ${Object.keys(EXAMPLES).join(', ')}`), 2;
  const result = await example();
  console.log(values.json ? JSON.stringify(result, null, 2) : `loopstate example: ${name} (offline, scripted model)\n\n${formatResult(result)}`);
  return result.status === 'succeeded' ? 0 : 1;
}

main(process.argv.slice(2)).then(
  (code) => (process.exitCode = code),
  (error: unknown) => {
    console.error(`loopstate: ${error instanceof Error ? error.message : String(error)}`);
    process.exitCode = 2;
  },
);
