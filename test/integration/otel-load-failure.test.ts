/**
 * `@opentelemetry/api` is imported by a process's first run (otel-api.ts). When that import fails (a bundle or an
 * edge build that cannot resolve it), runs still finish: a run that asked for OpenTelemetry is warned that its
 * spans are not recorded, one that did not ask is not, and the next run tries the import again.
 */
import type { Tracer } from '@opentelemetry/api';
import { describe, expect, it, vi } from 'vitest';
import { createLoop } from '../../src/index.js';
import { reply, scriptedModel } from '../../src/testing/index.js';

const attempts = vi.hoisted(() => ({ count: 0 }));
vi.mock('@opentelemetry/api', () => {
  attempts.count += 1;
  throw new Error('Cannot find package @opentelemetry/api');
});

const loopWith = (otel: { tracer?: Tracer } | undefined) =>
  createLoop({ model: scriptedModel([reply('done')]), tools: [], ...(otel ? { trace: { otel } } : {}) });

describe('a failed @opentelemetry/api import', () => {
  it('ends no run: a run that asked for spans is warned, one that did not is not, and each run tries again', async () => {
    const quiet = await loopWith(undefined).run({ goal: 'say done' });
    expect(quiet.stopReason).toBe('completed');
    expect(quiet.warnings.join('\n')).not.toMatch(/trace\.otel/);

    const tracer = { startSpan: () => undefined, startActiveSpan: () => undefined } as unknown as Tracer;
    const asked = await loopWith({ tracer }).run({ goal: 'say done' });
    expect(asked.stopReason).toBe('completed');
    expect(asked.warnings.join('\n')).toMatch(
      // vitest wraps the factory's error in its own message: the reason is there, in parentheses.
      /trace\.otel is not recorded for this run: @opentelemetry\/api could not be loaded \(.+\)/,
    );
    expect(attempts.count).toBeGreaterThanOrEqual(2);
  });
});
