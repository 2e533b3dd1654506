/**
 * The incident example end to end: 22 distinct diagnostics, a stop for the restart's approval persisted
 * in SQLite, the approval, the resume from the store, one restart, a verified report.
 */
import { describe, expect, it } from 'vitest';
import { DIAGNOSTICS, restarts, runIncidentExample } from '../../examples/incident.js';

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
    expect(stopped.pendingApprovals).toEqual([expect.objectContaining({ tool: 'restart_service', args: expect.objectContaining({ service: 'payments-api', rollbackTo: 'v2.13.2' }) })]);
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
    expect(resumed.trace.filter((event) => event.type === 'approval-decided')).toEqual([expect.objectContaining({ tool: 'restart_service', approved: true })]);
    // No diagnostic ran twice: the resumed run's tool results are the 22 + the restart + one check.
    expect(resumed.trace.filter((event) => event.type === 'tool-end')).toHaveLength(24);
    expect(lines[0]).toContain('needs_human');
    expect(lines[1]).toContain('completed');
  });
});
