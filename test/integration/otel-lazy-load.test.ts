/**
 * `@opentelemetry/api` costs 17–29 ms to load: a process that imports loopstate but never runs a loop (the CLI's
 * `verify`) must not pay it, and a run still asks it whether an SDK is registered.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { buildCrashChild, removeCrashChild, runChild } from '../durable/crash-harness.js';

const entry = '../integration/fixtures/otel-lazy-child.ts';
let script = '';
beforeAll(async () => {
  script = await buildCrashChild(entry);
}, 120_000);
afterAll(() => removeCrashChild(entry));

describe('@opentelemetry/api is loaded at first use', () => {
  it('is not loaded by importing loopstate, and is by a run', async () => {
    const child = await runChild(script, []);
    expect(child.stderr).toBe('');
    expect(JSON.parse(child.stdout.trim())).toEqual({ afterImport: false, afterRun: true, stopReason: 'completed' });
  }, 60_000);
});
