/**
 * A stored run's own records, beside its journal: the run record (its metadata: how it started, where it stands,
 * what it waits on, its result) and a tenant's ledger. Versioned with the journal's records (see records.ts).
 */
import { z } from 'zod';
import { idRecordSchema } from './id-record.js';
import { recordedLimitsSchema } from './recorded-limits.js';
import { messagesSchema, schemaVersionSchema } from './records.js';

export const pendingApprovalRecordSchema = z
  .object({
    callId: z.string(),
    tool: z.string(),
    args: z.unknown(),
    argumentsHash: z.string(),
    /** Epoch ms after which the approval is refused as expired; null: it does not expire. */
    expiresAt: z.number().nullable(),
  })
  .strict();

/** An output waiting for a person's review: what `result.pendingReview` shows, and what an accept completes the task with. */
export const pendingReviewRecordSchema = z
  .object({
    taskId: z.string(),
    output: z.unknown(),
    rawOutput: z.string(),
    reason: z.string(),
    evaluator: z.string(),
    outputHash: z.string(),
  })
  .strict();

/** A review decision the run took, by the output it was about. */
export const decidedReviewSchema = z
  .object({
    outputHash: z.string(),
    taskId: z.string(),
    accept: z.boolean(),
    reason: z.string().nullable(),
    /** The stop it decided (`reviewIdOf`); absent in records written before review ids. */
    reviewId: z.string().optional(),
  })
  .strict();

const amountsSchema = z
  .object({ costUsd: z.number().min(0), inputTokens: z.number().min(0), outputTokens: z.number().min(0) })
  .strict();
/** Per dimension, what a run holds of its tenant's budget; null where the tenant sets no cap. */
const holdSchema = z
  .object({
    costUsd: z.number().min(0).nullable(),
    inputTokens: z.number().min(0).nullable(),
    outputTokens: z.number().min(0).nullable(),
  })
  .strict();

/** A tenant's ledger: what its finished runs spent, and what its unfinished runs hold. */
export const ledgerRecordSchema = z
  .object({
    schemaVersion: schemaVersionSchema,
    kind: z.literal('ledger'),
    tenantId: z.string(),
    spent: amountsSchema,
    holds: idRecordSchema(holdSchema, 'an object keyed by run id'),
  })
  .strict();

export const runRecordSchema = z
  .object({
    schemaVersion: schemaVersionSchema,
    kind: z.literal('run'),
    runId: z.string(),
    input: z.object({ goal: z.string().optional(), messages: messagesSchema.optional() }).strict(),
    /** What the run was started with: a resume by a loop with other tools, tasks or plan setting is refused. */
    definition: z
      .object({ tools: z.array(z.string()), tasks: z.array(z.string()).nullable(), plan: z.boolean() })
      .strict(),
    /** The run's own limits as it started (before a tenant's share): the ones that apply on every resume. Absent in version 1. */
    limits: recordedLimitsSchema.optional(),
    /** running: in progress or crashed; waiting: stopped for approval; finished: a final result. */
    state: z.enum(['running', 'waiting', 'finished']),
    /** The seq of the event that stopped the run for approval (or review). */
    waitingSeq: z.number().int().nullable(),
    pendingApprovals: z.array(pendingApprovalRecordSchema),
    decidedCalls: z.array(z.string()),
    /** The output the run waits on a person's review of; absent (or null) when it waits for none. */
    pendingReview: pendingReviewRecordSchema.nullable().optional(),
    /** The review decisions the run took, oldest first; absent in records written before reviews. */
    decidedReviews: z.array(decidedReviewSchema).optional(),
    /** The run's share of its tenant's budget, held until it finishes; null without a tenant. */
    tenantHold: z.object({ tenantId: z.string(), hold: holdSchema, tenantLeft: holdSchema }).strict().nullable(),
    result: z
      .looseObject({ runId: z.string(), status: z.string(), stopReason: z.string(), detail: z.string() })
      .nullable(),
    /**
     * Version 3: the result's trace is not in `result` (empty there) but in the journal's trace chunks up
     * to the final chunk at `seq`, `length` events: the trace is stored once. Absent: `result` holds it whole.
     */
    resultTrace: z
      .object({ seq: z.number().int().positive(), length: z.number().int().min(0) })
      .strict()
      .optional(),
    /**
     * Version 6: the result's messages are not in `result` (empty there) but in the journal's transcript chunks: the
     * chain from the chunk at `seq` (written with the stop) back to the chunk holding the transcript whole, which is
     * at `from` or after it; `messages` long, then `closing` (what the stop answered calls left open with).
     * Absent: `result` holds them whole.
     */
    resultMessages: z
      .object({
        seq: z.number().int().positive(),
        from: z.number().int().min(0),
        messages: z.number().int().min(0),
        closing: messagesSchema,
      })
      .strict()
      .optional(),
  })
  .strict();

export type RunRecord = z.output<typeof runRecordSchema>;
export type ResultMessagesAt = NonNullable<RunRecord['resultMessages']>;
export type PendingApprovalRecord = z.output<typeof pendingApprovalRecordSchema>;
export type PendingReviewRecord = z.output<typeof pendingReviewRecordSchema>;
export type DecidedReview = z.output<typeof decidedReviewSchema>;
/**
 * A tenant's ledger: what its finished runs spent, and what each unfinished run holds (null: not capped).
 * @example
 * const ledger: LedgerRecord | null = await readTenantLedger(store, 'acme');
 */
export type LedgerRecord = z.output<typeof ledgerRecordSchema>;
export type TenantHold = z.output<typeof holdSchema>;
