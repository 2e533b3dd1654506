/**
 * The incident example end to end: 23 distinct diagnostics (22 before the restart, one after), a stop for
 * the restart's approval persisted in SQLite, the approval, the resume from the store, one restart, a
 * verified report.
 */
import { readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import { CHECK_AFTER_RESTART, DIAGNOSTICS, restarts, runIncidentExample } from '../../examples/incident.js';
import { BUNDLED_EXAMPLES } from '../../src/tooling/cli/bundled-examples.js';

describe('examples/incident', () => {
  it('investigates, waits for approval of the restart, and is resumed from the store exactly there', async () => {
    const lines: string[] = [];
    const restartsWhenStopped: number[] = [];
    restarts.length = 0;
    const { stopped, resumed } = await runIncidentExample((line) => {
      lines.push(line);
      restartsWhenStopped.push(restarts.length);
    });
    expect(new Set(DIAGNOSTICS.map(([check, target]) => `${check} ${target}`)).size).toBe(22);
    // 22 diagnostics, then the restart request: a destructive call stops the run for a person.
    expect(stopped.stopReason).toBe('needs_human');
    expect(stopped.steps).toBe(23);
    expect(stopped.usage.toolCalls).toBe(22);
    expect(stopped.pendingApprovals).toEqual([
      expect.objectContaining({
        tool: 'restart_service',
        args: expect.objectContaining({ service: 'payments-api', rollbackTo: 'v2.13.2' }),
      }),
    ]);
    // Nothing destructive ran before the approval.
    expect(restartsWhenStopped[0]).toBe(0);
    // Approved: the restart runs once, one check, the report passes its schema.
    expect(resumed.stopReason).toBe('completed');
    expect(resumed.steps).toBe(25);
    expect(restarts).toHaveLength(1);
    expect(restarts[0]).toMatch(/^payments-api@v2\.13\.2:/);
    expect(resumed.usage.modelCalls).toBe(25);
    expect(resumed.usage.toolCalls).toBe(24);
    expect(resumed.output).toMatchObject({ verified: true, action: expect.stringContaining('v2.13.2') });
    expect(resumed.trace.filter((event) => event.type === 'approval-decided')).toEqual([
      expect.objectContaining({ tool: 'restart_service', approved: true }),
    ]);
    // No diagnostic ran twice: the resumed run's tool results are the 22 + the restart + one check.
    expect(resumed.trace.filter((event) => event.type === 'tool-end')).toHaveLength(24);
    expect(lines[0]).toContain('needs_human');
    expect(lines[1]).toContain('completed');

    // What the example says about itself counts the diagnostics the run made: every run_diagnostic call, distinct.
    const diagnostics = resumed.messages
      .flatMap((message) => (message.role === 'assistant' ? (message.toolCalls ?? []) : []))
      .filter((call) => call.name === 'run_diagnostic')
      .map((call) => call.arguments);
    const distinct = new Set(diagnostics).size;
    expect(distinct).toBe(diagnostics.length);
    expect(distinct).toBe(
      new Set([...DIAGNOSTICS, CHECK_AFTER_RESTART].map(([check, target]) => `${check} ${target}`)).size,
    );
    const health = resumed.trace.filter((event) => event.type === 'tool-health').at(-1);
    expect(health?.type === 'tool-health' && health.tools.find((tool) => tool.name === 'run_diagnostic')?.calls).toBe(
      distinct,
    );
    const docsRow = readFileSync(new URL('../../docs/getting-started/first-loop.md', import.meta.url), 'utf8')
      .split('\n')
      .find((line) => line.startsWith('| `incident` |'));
    for (const text of [
      BUNDLED_EXAMPLES.incident?.description,
      docsRow,
      readFileSync(new URL('../../examples/incident.ts', import.meta.url), 'utf8').slice(0, 400),
    ]) {
      expect(text).toMatch(new RegExp(`\\b${distinct} distinct (read-only )?diagnostics`));
    }
  });
});
