/**
 * SIGKILL inside a group of uncommitted steps (`durable.maxUncommittedSteps` 4), resumed in a new process: the
 * model is asked again for at most the bound's calls (those of the group the crash lost), their idempotent
 * calls run again under the same keys, the write runs once, and the run ends with the same messages, usage and
 * output as a run that was never killed.
 */
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { buildCrashChild, removeCrashChild, runChild, type ChildOutcome } from './crash-harness.js';

const entry = join('fixtures', 'group-crash-child.ts');
let script: string;
const scratch = mkdtempSync(join(tmpdir(), 'loopstate-group-crash-'));

beforeAll(async () => {
  script = await buildCrashChild(entry);
}, 60_000);
afterAll(() => {
  rmSync(scratch, { recursive: true, force: true });
  removeCrashChild(entry);
});

interface Ended {
  stopReason: string;
  output: unknown;
  usage: { modelCalls: number; toolCalls: number; inputTokens: number; outputTokens: number };
  messages: unknown[];
}

function ended(outcome: ChildOutcome): Ended {
  if (outcome.code !== 0) throw new Error(`child failed (${outcome.code ?? outcome.signal}): ${outcome.stderr}`);
  return JSON.parse(outcome.stdout) as Ended;
}

/** Runs the loop (killed at `killAt` if given, then resumed in a new process); the result and the effect log. */
async function runOnce(killAt: string | null, steps = '4') {
  const dir = mkdtempSync(join(scratch, 'case-'));
  const db = join(dir, 'loops.db');
  const logFile = join(dir, 'effects.log');
  const env = { MAX_UNCOMMITTED_STEPS: steps };
  const first = await runChild(script, [db, logFile, 'run'], killAt === null ? env : { ...env, KILL_AT: killAt });
  let result: Ended;
  if (killAt === null) result = ended(first);
  else {
    expect(first.signal, first.stderr).toBe('SIGKILL');
    result = ended(await runChild(script, [db, logFile, 'resume'], env));
  }
  return { result, lines: readFileSync(logFile, 'utf8').split('\n').filter(Boolean) };
}

const count = (lines: string[], line: string) => lines.filter((each) => each === line).length;
/** The model calls made twice. */
const askedTwice = (lines: string[]) =>
  Array.from({ length: 13 }, (_, step) => step).filter((step) => count(lines, `model:${step}`) === 2);

describe.concurrent('SIGKILL inside a group of uncommitted steps, resumed in a new process', () => {
  let uncrashed: Promise<{ result: Ended; lines: string[] }>;
  beforeAll(() => {
    uncrashed = runOnce(null);
  });

  it('uncrashed: every model call and effect once', async () => {
    const { result, lines } = await uncrashed;
    expect(result.stopReason).toBe('completed');
    expect(result.usage.modelCalls).toBe(13);
    expect(askedTwice(lines)).toEqual([]);
    expect(lines.filter((line) => line.startsWith('effect:charge:'))).toHaveLength(1);
  }, 60_000);

  // Commits before calls 0, 4 (4 calls uncommitted), the charge's intent (reply 5), 6 (after the write), 10.
  it.each([
    ['before-model-3', [0, 1, 2]],
    ['before-model-4', []],
    ['before-model-9', [6, 7, 8]],
    ['before-model-10', []],
    ['before-model-12', [10, 11]],
  ])(
    'killed %s: the model is asked again for %j only, and the run ends as the uncrashed one',
    async (killAt, again) => {
      const { result, lines } = await runOnce(killAt);
      const reference = (await uncrashed).result;
      expect(askedTwice(lines)).toEqual(again);
      expect(again.length).toBeLessThanOrEqual(4);
      // Their idempotent calls ran again, under the same keys (11 lookups: one a step but the charge's and the answer's).
      const lookups = lines.filter((line) => line.startsWith('lookup:'));
      expect(new Set(lookups).size).toBe(11);
      expect(lookups).toHaveLength(11 + again.length);
      expect(lines.filter((line) => line.startsWith('effect:charge:'))).toHaveLength(1);
      expect(result.stopReason).toBe('completed');
      expect(result.messages).toEqual(reference.messages);
      expect(result.usage).toEqual(reference.usage);
      expect(result.output).toEqual(reference.output);
    },
    60_000,
  );
});
