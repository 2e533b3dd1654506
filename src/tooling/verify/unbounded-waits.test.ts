import { describe, expect, it } from 'vitest';
import { z } from 'zod';
import { evaluators, type Evaluator } from '../../index.js';
import { createLoop } from '../../index.js';
import { memoryStore } from '../../index.js';
import { reply, scriptedModel } from '../../testing/index.js';
import { defineTool } from '../../index.js';
import { formatReport } from './format-report.js';
import { resolveForVerify } from './resolve-for-verify.js';
import { verifyLoopConfig, type VerifyReport } from './verify-loop.js';
import type { LoopConfig } from '../../index.js';

const ticketService: Evaluator = {
  name: 'ticket-service',
  kind: 'rule',
  evaluate: ({ parsed }) => ({ passed: true, reason: 'ok', parsed }),
};
const restart = defineTool({
  name: 'restart',
  description: 'Restarts the service',
  input: z.object({}),
  access: 'destructive',
  execute: () => 'restarted',
});

function verify(config: Omit<LoopConfig, 'model'>): { report: VerifyReport; text: string } {
  const loop = createLoop({
    model: scriptedModel([reply('ok')]),
    ...config,
    limits: { maxSteps: 2, maxRetries: 1, ...config.limits },
  });
  const { config: resolved } = resolveForVerify(loop);
  const report = verifyLoopConfig(resolved);
  return { report, text: formatReport(report, 'loop.ts') };
}

describe('verify with the deadline switched off names the waits nothing bounds in time', () => {
  it('does not claim that no run goes on for ever when an evaluator has no time bound either', () => {
    const { report, text } = verify({
      evaluate: [evaluators.json(), ticketService],
      limits: { deadlineMs: Infinity, evaluatorTimeoutMs: Infinity },
    });
    expect(report.bounded).toBe(true);
    expect(report.unboundedWaits).toEqual([
      'evaluators "json", "ticket-service" may take as long as they like: limits.evaluatorTimeoutMs is Infinity',
    ]);
    expect(text).not.toContain('no run goes on for ever');
    expect(text).toContain('\nbounded in steps: every run takes finitely many steps (the state graph has no cycle)');
    expect(text).toContain(
      '\ndeadlineMs is Infinity, so a run may still last for ever: nothing bounds these waits in time:\n  - evaluators "json", "ticket-service" may take as long as they like: limits.evaluatorTimeoutMs is Infinity',
    );
  });

  it("lists a store's pause and a person's decision when the loop has a store and a tool that needs approval", () => {
    const { report } = verify({ tools: [restart], store: memoryStore(), limits: { deadlineMs: Infinity } });
    expect(report.stopReasons).toContain('needs_human');
    expect(report.unboundedWaits).toEqual([
      'a store-wide pause holds the run before its next step until it is lifted, and each store call is awaited as long as the store takes',
      "a run that stops with needs_human waits for a person's decision before loop.resume continues it (durable.approvalExpiresAfterMs, unset, would make a late approval fail)",
    ]);
  });

  it('says every wait is timed when only the deadline is off', () => {
    const { report, text } = verify({ evaluate: ticketService, limits: { deadlineMs: Infinity } });
    expect(report.unboundedWaits).toEqual([]);
    expect(text).toContain(
      '\ndeadlineMs is Infinity: no deadline bounds a run in time, but each wait it makes has a timeout of its own',
    );
    expect(text).not.toContain('no run goes on for ever');
  });

  it('keeps the claim, and lists nothing, with a finite deadline', () => {
    const { report, text } = verify({
      evaluate: ticketService,
      tools: [restart],
      store: memoryStore(),
      limits: { deadlineMs: 5_000, evaluatorTimeoutMs: Infinity },
    });
    expect(report.unboundedWaits).toEqual([]);
    expect(text).toContain('\nbounded: no run goes on for ever (the state graph has no cycle)');
    expect(text).not.toContain('deadlineMs is Infinity');
  });
});
