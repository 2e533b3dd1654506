/**
 * What a loop has learned across runs, as the store keeps it: one versioned, zod-validated record per
 * loop name and tenant. Counts are decayed (they halve every `halfLifeMs`), so they are numbers, not
 * integers. A record is decoded whole or refused whole with a `LearningRecordError` naming its key.
 *
 * Changelog — 1: per tool its decayed successes, failures and latency, its weight, its failure streak;
 * per task its decayed passes, failures, pass rate and failure reasons.
 */
import { z } from 'zod';
import { LoopstateError } from '../../contracts/errors.js';
import { describeZodIssues } from '../zod-issues.js';
import { idRecordSchema } from '../durable/id-record.js';

export const LEARNING_SCHEMA_VERSION = 1 as const;

/**
 * One tool as learned across runs.
 * @example
 * const tool: LearnedTool = { successes: 8.5, failures: 1.2, totalLatencyMs: 930, weight: 0.82, consecutiveFailures: 0, lastFailureAt: 0 };
 */
export interface LearnedTool {
  successes: number;
  failures: number;
  totalLatencyMs: number;
  /** How much to prefer the tool, in [0, 1]: a moving average of its batches' success rates, faded towards 1. */
  weight: number;
  /** Failures in a row across runs (the circuit breaker's count); a success resets it. */
  consecutiveFailures: number;
  /** When it last failed (the loop's clock, epoch ms); 0 when never. */
  lastFailureAt: number;
}

/**
 * One task as learned from its evaluations across runs.
 * @example
 * const task: LearnedTask = { passes: 6, failures: 3, passRate: 0.7, reasons: { 'missing field total': 2.6 } };
 */
export interface LearnedTask {
  passes: number;
  failures: number;
  /** A moving average of the batches' pass rates, faded towards 1. */
  passRate: number;
  /** Failure reasons and their decayed counts (the most frequent few are kept). */
  reasons: Record<string, number>;
}

/**
 * A loop's learning record.
 * @example
 * const record: LearningRecord = { schemaVersion: 1, kind: 'learning', name: 'support-bot', tenantId: null, updatedAt: 0, tools: {}, tasks: {} };
 */
export interface LearningRecord {
  schemaVersion: typeof LEARNING_SCHEMA_VERSION;
  kind: 'learning';
  name: string;
  tenantId: string | null;
  /** When the counts were last decayed (the loop's clock, epoch ms). */
  updatedAt: number;
  tools: Record<string, LearnedTool>;
  tasks: Record<string, LearnedTask>;
}

const count = z.number().finite().min(0);
const learnedToolSchema = z
  .object({
    successes: count,
    failures: count,
    totalLatencyMs: count,
    weight: z.number().min(0).max(1),
    consecutiveFailures: z.number().int().min(0),
    lastFailureAt: z.number().finite(),
  })
  .strict();
const learnedTaskSchema = z
  .object({
    passes: count,
    failures: count,
    passRate: z.number().min(0).max(1),
    reasons: idRecordSchema(count, 'an object of reason counts'),
  })
  .strict();
const recordSchema = z
  .object({
    schemaVersion: z.literal(LEARNING_SCHEMA_VERSION),
    kind: z.literal('learning'),
    name: z.string(),
    tenantId: z.string().nullable(),
    updatedAt: z.number().finite(),
    tools: idRecordSchema(learnedToolSchema, 'an object keyed by tool name'),
    tasks: idRecordSchema(learnedTaskSchema, 'an object keyed by task id'),
  })
  .strict();

/**
 * A learning record the store holds that cannot be read: not JSON, a wrong shape, or a newer schema
 * version. A run that meets one warns and starts from nothing learned; it leaves the record as it is
 * (`loopstate learning reset` clears it).
 * @example
 * if (error instanceof LearningRecordError) console.error(error.key, error.problem);
 */
export class LearningRecordError extends LoopstateError {
  readonly key: string;
  readonly problem: string;
  constructor({
    code,
    key,
    problem,
  }: {
    code: 'corrupt_record' | 'unsupported_record_version';
    key: string;
    problem: string;
  }) {
    super({ code, message: `Refused the learning record ${key}: ${problem}` });
    this.key = key;
    this.problem = problem;
  }
}

/**
 * The store key of a loop's learning: its name and tenant, unambiguous whatever characters they hold.
 * @example
 * learningKey('support-bot', 'acme'); // '["support-bot","acme"]'
 */
export function learningKey(name: string, tenantId: string | null): string {
  return JSON.stringify([name, tenantId]);
}

/** A new, empty record. */
export function emptyLearningRecord(name: string, tenantId: string | null, at: number): LearningRecord {
  return {
    schemaVersion: LEARNING_SCHEMA_VERSION,
    kind: 'learning',
    name,
    tenantId,
    updatedAt: at,
    tools: Object.create(null) as Record<string, LearnedTool>,
    tasks: Object.create(null) as Record<string, LearnedTask>,
  };
}

/** Decodes a stored record, or throws `LearningRecordError` naming the key and the bad field. */
export function decodeLearningRecord(body: string, key: string): LearningRecord {
  let value: unknown;
  try {
    value = JSON.parse(body);
  } catch (error) {
    throw new LearningRecordError({
      code: 'corrupt_record',
      key,
      problem: `not JSON (${error instanceof Error ? error.message : String(error)})`,
    });
  }
  const version = (value as { schemaVersion?: unknown } | null)?.schemaVersion;
  if (typeof version === 'number' && version > LEARNING_SCHEMA_VERSION)
    throw new LearningRecordError({
      code: 'unsupported_record_version',
      key,
      problem: `schemaVersion ${version} is newer than this loopstate reads (${LEARNING_SCHEMA_VERSION}); upgrade loopstate`,
    });
  const parsed = recordSchema.safeParse(value);
  if (!parsed.success)
    throw new LearningRecordError({
      code: 'corrupt_record',
      key,
      problem: describeZodIssues(parsed.error.issues).join('; '),
    });
  // Keyed without a prototype (idRecordSchema): a tool or task may be named `__proto__`.
  return parsed.data as LearningRecord;
}

/** The record as the store keeps it. */
export function encodeLearningRecord(record: LearningRecord): string {
  return JSON.stringify(record);
}
