/**
 * Seed 000's "investigate an outage and choose the next diagnostic command".
 * 23 distinct read-only diagnostics, all calls of one tool (`run_diagnostic`): 22 narrow a payments outage
 * down to a memory leak in the last deploy, then the model asks to restart the service. A restart is destructive, so the run stops
 * with `needs_human` and a pending approval persisted in the store; a person approves, and the run is resumed
 * from the store exactly there (no diagnostic runs again), restarts the service once, checks it with the
 * 23rd diagnostic and reports.
 *
 * Runs offline on scripted models over a real SQLite file in a temporary folder.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { z } from 'zod';
import { createLoop, defineTool, evaluators, memoryStore, type Model, type RunResult, type Store } from 'loopstate';
import { sqliteStore } from 'loopstate/sqlite';
import { reply, scriptedModel, toolCall, type ScriptStep } from 'loopstate/testing';

const CHECKS = [
  'service_status',
  'error_rate',
  'latency_p99',
  'recent_deploys',
  'pod_restarts',
  'memory_usage',
  'cpu_usage',
  'tail_logs',
  'db_connections',
  'queue_depth',
  'dependency_health',
] as const;

/** A simulated production: what each diagnostic says about each target. Anything else is "nothing unusual". */
const WORLD: Record<string, string> = {
  'service_status payments-api': 'degraded: 3/8 pods ready',
  'service_status checkout-web': 'healthy',
  'error_rate payments-api': '38% 5xx over 15 min (baseline 0.2%)',
  'error_rate checkout-web': '12% 5xx, all from calls to payments-api',
  'latency_p99 payments-api': '9.8 s (baseline 240 ms)',
  'recent_deploys payments-api': 'v2.14.0 deployed 41 min ago (v2.13.2 before)',
  'pod_restarts payments-api': '27 restarts in 40 min, reason OOMKilled',
  'memory_usage payments-api': 'climbs from 300 MiB to the 1 GiB limit in ~6 min after each start',
  'memory_usage payments-db': '41% of 16 GiB, steady',
  'cpu_usage payments-api': '35%, no spikes',
  'cpu_usage payments-db': '22%, steady',
  'tail_logs payments-api': 'WARN receipt cache size 812k entries; FATAL heap out of memory',
  'db_connections payments-db': '120/500, normal',
  'queue_depth payments-events': '2.1k, draining',
  'dependency_health card-gateway': 'healthy, p99 180 ms',
  'dependency_health fraud-scoring': 'healthy',
};

export const runDiagnostic = defineTool({
  name: 'run_diagnostic',
  description: `Runs one read-only diagnostic against a service, database or queue. check is one of ${CHECKS.join(', ')}.`,
  input: z.object({
    check: z.enum(CHECKS),
    target: z.string().regex(/^[a-z][a-z0-9-]*$/, 'expected a service name like payments-api'),
  }),
  access: 'read',
  idempotent: true,
  execute: ({ check, target }) => ({ check, target, result: WORLD[`${check} ${target}`] ?? 'nothing unusual' }),
});

/** What the example's restart tool did, so its test can prove a restart ran exactly once. */
export const restarts: string[] = [];

export const restartService = defineTool({
  name: 'restart_service',
  description: 'Rolls a service back to a version and restarts it. Destructive: needs a person to approve.',
  input: z.object({
    service: z.string(),
    rollbackTo: z.string().regex(/^v\d+\.\d+\.\d+$/),
    reason: z.string().min(10),
  }),
  access: 'destructive',
  execute: ({ service, rollbackTo }, { idempotencyKey }) => {
    restarts.push(`${service}@${rollbackTo}:${idempotencyKey}`);
    return { service, version: rollbackTo, status: 'rolled back and restarted' };
  },
});

export const incidentReport = z.object({
  rootCause: z.string().min(10),
  evidence: z.array(z.string()).min(3),
  action: z.string(),
  verified: z.boolean(),
});

/** The 22 diagnostics of the investigation, each a distinct call (no repeats: new work, never no-progress). */
export const DIAGNOSTICS: readonly (readonly [(typeof CHECKS)[number], string])[] = [
  ['service_status', 'checkout-web'],
  ['error_rate', 'checkout-web'],
  ['service_status', 'payments-api'],
  ['error_rate', 'payments-api'],
  ['latency_p99', 'payments-api'],
  ['dependency_health', 'card-gateway'],
  ['dependency_health', 'fraud-scoring'],
  ['db_connections', 'payments-db'],
  ['cpu_usage', 'payments-db'],
  ['memory_usage', 'payments-db'],
  ['queue_depth', 'payments-events'],
  ['pod_restarts', 'payments-api'],
  ['cpu_usage', 'payments-api'],
  ['memory_usage', 'payments-api'],
  ['recent_deploys', 'payments-api'],
  ['tail_logs', 'payments-api'],
  ['latency_p99', 'checkout-web'],
  ['recent_deploys', 'checkout-web'],
  ['pod_restarts', 'checkout-web'],
  ['tail_logs', 'checkout-web'],
  ['error_rate', 'card-gateway'],
  ['queue_depth', 'refund-events'],
];

/** The 23rd diagnostic, after the restart: the rolled-back service's error rate, distinct from the 22 before it. */
export const CHECK_AFTER_RESTART: readonly [(typeof CHECKS)[number], string] = ['error_rate', 'payments-api-v2-13-2'];

const usage = { inputTokens: 900, outputTokens: 40 };

/** The first process's model: the investigation, then the request to restart (which stops for approval). */
export function investigationModel(): Model {
  const steps: ScriptStep[] = DIAGNOSTICS.map(([check, target]) =>
    toolCall('run_diagnostic', { check, target }, { usage }),
  );
  steps.push(
    toolCall(
      'restart_service',
      {
        service: 'payments-api',
        rollbackTo: 'v2.13.2',
        reason: 'v2.14.0 leaks memory (receipt cache) and is OOMKilled every ~6 min',
      },
      { usage },
    ),
  );
  return scriptedModel(steps);
}

/** The model after approval: it reads the restart's result, checks the service once more, and reports. */
export function afterApprovalModel(): Model {
  return scriptedModel([
    toolCall('run_diagnostic', { check: CHECK_AFTER_RESTART[0], target: CHECK_AFTER_RESTART[1] }, { usage }),
    reply(
      JSON.stringify({
        rootCause: 'payments-api v2.14.0 grows its receipt cache without bound and is OOMKilled every ~6 minutes',
        evidence: [
          '27 OOMKilled restarts in 40 min',
          'memory climbs to the 1 GiB limit after each start',
          'FATAL heap out of memory in the logs',
          'v2.14.0 deployed 41 min ago',
        ],
        action: 'rolled payments-api back to v2.13.2 (approved) and restarted it',
        verified: true,
      }),
      { usage },
    ),
  ]);
}

export function createIncidentLoop(model: Model, store: Store) {
  return createLoop({
    model,
    store,
    instructions:
      'You are on call for a payments outage. Choose the next diagnostic each turn; never repeat one. When the cause is clear, ' +
      'roll the service back with restart_service (a person approves it), verify, then answer with JSON {"rootCause", "evidence", "action", "verified"}.',
    tools: [runDiagnostic, restartService],
    evaluate: evaluators.schema(incidentReport),
    limits: { maxSteps: 30, maxRetries: 2, deadlineMs: 600_000, maxCostUsd: 1 },
    prices: { scripted: { inputPerMillion: 0.4, outputPerMillion: 1.6 } },
  });
}

/** The whole story: investigate, stop for approval, approve, resume from the store, report. */
export async function runIncidentExample(
  log: (line: string) => void = () => undefined,
): Promise<{ stopped: RunResult; resumed: RunResult }> {
  const folder = mkdtempSync(join(tmpdir(), 'loopstate-incident-'));
  const path = join(folder, 'incident.db');
  try {
    const first = sqliteStore({ path });
    const stopped = await createIncidentLoop(investigationModel(), first).run({ goal, runId: 'incident-1' });
    await first.close();
    const pending = stopped.pendingApprovals[0];
    log(
      `stopped after ${stopped.steps} steps: ${stopped.stopReason}; waiting for approval of ${pending?.tool ?? 'nothing'} ${JSON.stringify(pending?.args ?? null)}`,
    );
    if (pending === undefined) return { stopped, resumed: stopped };
    // Later, maybe in another process: a person approves, and the run continues from the store.
    const second = sqliteStore({ path });
    const resumed = await createIncidentLoop(afterApprovalModel(), second).resume('incident-1', {
      approvals: { [pending.callId]: { approve: true } },
    });
    await second.close();
    log(`resumed from ${path}: ${resumed.stopReason} after ${resumed.steps} steps in all`);
    return { stopped, resumed };
  } finally {
    rmSync(folder, { recursive: true, force: true });
  }
}

/** As a loop file (`loopstate run` / `loopstate verify examples/incident.ts`): the investigation, on an in-memory store. */
export const goal = 'payments are failing for 40% of checkouts; find out why and fix it';
export default createIncidentLoop(investigationModel(), memoryStore());
