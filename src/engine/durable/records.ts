/**
 * Every record a durable run persists, as versioned zod-validated envelopes `{ schemaVersion, kind, ... }`.
 * A record is decoded whole or refused whole (`StoreRecordError`): truncated JSON, a wrong shape or a
 * newer schema version never reach the run.
 *
 * Changelog — 1: run metadata (`run`), journal records (`event`, `model`, `intent`, `tool-result`) and
 * the run snapshot (`snapshot`). 2: the run record carries the run's `limits`, recorded when it starts
 * (a version 1 run has none: it takes the limits of the loop that resumes it, recorded from then on).
 * Also (version unchanged, the machine context is loose): a snapshot's context
 * holds `transport` (per-call transport counters) instead of `task.transportRetries`, and its limits
 * `maxTransportAttempts` / `maxTransportRetries`; older snapshots are migrated when read (transport-counters-migration.ts).
 * 3: a snapshot holds the machine, the small session fields and the warnings, no longer the history:
 * `messages` says how long the transcript was (rebuilt from the events' transcript changes before the
 * snapshot) and `traceLength` how long the in-memory trace was (put back from the `trace` chunks
 * committed with each snapshot). A version 1 or 2 snapshot, transcript and trace whole, is read as written.
 * The run record's `resultTrace`: a stop's result keeps its trace in the journal's trace chunks (a `final`
 * one written with the stop), not whole in the run record.
 * Also (version unchanged, the field optional): a `model` record's response keeps its `metadata` (id, model,
 * finish reason), so a reply served on resume is traced and warned about as the live one was; older
 * records have none.
 * 4: a `transcript` chunk is written with every snapshot, as the `trace` chunk is: the transcript's change since
 * the previous chunk (`previous`, its seq), and the snapshot names its chunk (`session.transcriptChunk`), so a
 * resume folds a few chunks instead of reading every event before the snapshot. A version 3 snapshot (no
 * `transcriptChunk`) is still rebuilt from the events before it.
 * Also (version unchanged, the fields optional): the run record's `pendingReview` and `decidedReviews`, and an
 * event record's `review` (a run stopped for a person's review of an output); older records have none.
 * 5: a snapshot no longer holds the no-progress tracker's triples (they grew with the task, and the snapshot with
 * them): its `fields.progress` is `chained` (the tracker but its triples), and the transcript chunk written with
 * it carries the triples (`progress`): every triple of the task, or those counted since the previous chunk; a
 * resume folds the chain back to the last whole one. A version 4 chunk has none (its snapshot holds them whole).
 * Also an event's `delta.fields` holds only the fields that changed since the previous event (absent: unchanged,
 * `null`: set to null; `progress` always); the snapshot holds them all. A version 4 event holds them all.
 * 6: a stop's run record no longer holds the transcript a second time: its `result.messages` is empty and
 * `resultMessages` names the last transcript chunk, written with the stop, whose chain holds them (and the notes the
 * stop answered open calls with). A record without `resultMessages` holds them whole, as before. The other records
 * are shaped as version 5's; the bump makes an older loopstate refuse this version's records as too new.
 * Also (version unchanged, the field optional): a snapshot's `session.chainFrom`, the seq of the first chunk its
 * chains reach, so a resume reads the transcript chunks from there; an older snapshot has none (read from the start).
 * And a transcript chunk's `progress.triples` is a flat array `[key, count, …]`; older chunks' object form still reads.
 * Every version up to this one is read; records are written with this one. The run record and a tenant's ledger are
 * shaped in run-record.ts, and every record is decoded and encoded in record-codec.ts.
 */
import { z } from 'zod';
import { modelResponseSchema } from '../../contracts/model-response-schema.js';
import type { Message } from '../../contracts/model.js';
import type { TraceEvent } from '../trace/trace-event.js';
import { idRecordSchema } from './id-record.js';

export const RECORD_SCHEMA_VERSION = 6 as const;
/** The versions this loopstate reads: the shapes of older ones are a subset of this one's. */
export const schemaVersionSchema = z.union([
  z.literal(1),
  z.literal(2),
  z.literal(3),
  z.literal(4),
  z.literal(5),
  z.literal(RECORD_SCHEMA_VERSION),
]);

const toolCallSchema = z.object({ id: z.string(), name: z.string(), arguments: z.string() }).strict();
const messageSchema = z.union([
  z.object({ role: z.enum(['system', 'user']), content: z.string() }).strict(),
  z
    .object({
      role: z.literal('assistant'),
      content: z.string().nullable(),
      toolCalls: z.array(toolCallSchema).optional(),
    })
    .strict(),
  z.object({ role: z.literal('tool'), toolCallId: z.string(), content: z.string() }).strict(),
]);
const traceEventSchema = z.looseObject({ type: z.string(), runId: z.string(), at: z.number() });
// Checked for shape here; typed as what the runtime wrote (the union the trace and model modules define).
export const messagesSchema = z.array(messageSchema) as unknown as z.ZodType<Message[]>;
const traceSchema = z.array(traceEventSchema) as unknown as z.ZodType<TraceEvent[]>;
const errorSchema = z.object({ name: z.string(), message: z.string(), code: z.string().optional() }).strict();

const pendingCallSchema = z
  .object({
    request: toolCallSchema,
    status: z.enum(['ready', 'invalid', 'denied', 'needs_approval', 'unavailable']),
    args: z.unknown(),
    error: z.object({ key: z.string(), message: z.string() }).strict().nullable(),
    fingerprint: z.string(),
    refusal: z
      .object({
        reason: z.enum([
          'duplicate in the reply',
          'maxToolCalls spent',
          'over maxToolCallsPerReply',
          'rejected by a person',
        ]),
        message: z.string(),
      })
      .strict()
      .nullable(),
  })
  .strict();

const countersSchema = z
  .object({
    calls: z.number(),
    successes: z.number(),
    failures: z.number(),
    consecutiveFailures: z.number(),
    totalLatencyMs: z.number(),
    lastFailureAt: z.number(),
  })
  .strict();

const wholeProgressSchema = z.object({ kind: z.literal('whole'), snapshot: z.unknown() }).strict();
/** Version 5, in a snapshot: the tracker but its triples, which are in the chain of the snapshot's transcript chunk. */
const chainedProgressSchema = z
  .object({
    kind: z.literal('chained'),
    schemaVersion: z.union([z.literal(2), z.literal(3)]),
    distinctObservationsHash: z.string(),
    failures: z.number().int().min(0),
    stateDigest: z.string(),
  })
  .strict();

/** The session fields that are small and replaced whole on every step. */
export const sessionFieldsSchema = z
  .object({
    taskIndex: z.number().int(),
    pendingCalls: z.array(pendingCallSchema),
    lastReply: z.string().nullable(),
    lastEvaluation: z
      .object({
        taskIndex: z.number().int(),
        reply: z.string(),
        formatted: z.object({ value: z.unknown() }).nullable(),
        /** Absent unless an evaluator asked a person to review the reply. */
        review: z
          .object({ output: z.unknown(), evaluator: z.string(), reason: z.string(), outputHash: z.string() })
          .strict()
          .optional(),
      })
      .strict()
      .nullable(),
    fatalError: errorSchema.nullable(),
    restingState: z.string().nullable(),
    /** Null when no task output was added since the last record. */
    taskOutputs: idRecordSchema(z.unknown(), 'an object keyed by task id').nullable(),
    /** The tracker whole (a snapshot, or a run's first record), or what changed in it. */
    progress: z.union([
      wholeProgressSchema,
      z
        .object({
          kind: z.literal('changes'),
          // Version 5 leaves out what did not change (restarted: false, no triple, the same hashes and count).
          restarted: z.boolean().optional(),
          triples: z.record(z.string(), z.number().int().min(0)).optional(),
          distinctObservationsHash: z.string().optional(),
          failures: z.number().int().min(0).optional(),
          stateDigest: z.string().optional(),
        })
        .strict(),
    ]),
    plan: z.array(z.looseObject({ id: z.string(), status: z.string() })).nullable(),
    /** Null when the run shares a health object the caller owns. */
    health: idRecordSchema(countersSchema, 'an object keyed by tool name').nullable(),
    unpricedModels: z.array(z.string()),
  })
  .strict();

/** A snapshot's fields: the tracker whole (up to version 4) or chained (version 5). */
const snapshotFieldsSchema = sessionFieldsSchema.extend({
  progress: z.union([wholeProgressSchema, chainedProgressSchema]),
});

/**
 * Flat triples, key then count (`[key, count, …]`): how a chunk of this version holds them (an object of thousands
 * of keys parses several times slower). That keys and counts alternate is checked where they are folded (chain-folding.ts
 * `tripleChain`) and by the hand decoder (chunk-records.ts), not here: a refinement would keep every chunk off the
 * as-is check's fast path.
 */
const flatTriplesSchema = z.array(z.union([z.string(), z.number().int().min(0)]));

/**
 * Version 5: the tracker's (call, result) triples in a transcript chunk: all of the task's, or those counted since
 * the previous chunk. An object keyed by triple, or (since the object is slow to parse) a flat array of key, count.
 */
export const tripleChangesSchema = z
  // The array first: the as-is check is unsure of a record's option given an array (zod's to pass), sure of the reverse.
  .object({ whole: z.boolean(), triples: z.union([flatTriplesSchema, z.record(z.string(), z.number().int().min(0))]) })
  .strict();

const transcriptChangeSchema = z
  .object({
    /** True: `messages` is the whole transcript (a new task, or trimmed); false: messages appended after `from`. */
    replace: z.boolean(),
    from: z.number().int().min(0),
    messages: messagesSchema,
    taskMessageIndex: z.number().int().nullable(),
  })
  .strict();

/**
 * An event's fields: up to version 4 all of them; version 5 only those that changed since the previous event
 * (absent: unchanged; `null`: set to null), the tracker's part always.
 */
// `.extend`, not `.required({ progress: true })`: that wraps the key in a `nonoptional` schema, which as-is-check.ts
// leaves to zod, and every event would lose the fast path. The key keeps its place in the shape.
const deltaFieldsSchema = sessionFieldsSchema.partial().extend({ progress: sessionFieldsSchema.shape.progress });

/** What one step changed in the session outside the machine, against the state after the previous event. */
export const sessionDeltaSchema = z
  .object({
    transcript: transcriptChangeSchema,
    traceFrom: z.number().int().min(0),
    trace: traceSchema,
    warningsFrom: z.number().int().min(0),
    warnings: z.array(z.string()),
    fields: deltaFieldsSchema,
  })
  .strict();

/** The fields every event of version 4 or before carries (a version 5 event may leave out those unchanged). */
const allFieldKeys = Object.keys(sessionFieldsSchema.shape);
const progressChangeKeys = ['restarted', 'triples', 'distinctObservationsHash', 'failures', 'stateDigest'];

const eventSchema = z.looseObject({ type: z.string().min(1), at: z.number() });

const base = { schemaVersion: schemaVersionSchema, runId: z.string(), seq: z.number().int().positive() };

const approvalDecisionSchema = z.union([
  z.object({ approve: z.literal(true), argumentsHash: z.string().optional() }).strict(),
  z.object({ approve: z.literal(false), reason: z.string(), argumentsHash: z.string().optional() }).strict(),
]);

const reviewDecisionSchema = z.union([
  z.object({ accept: z.literal(true), outputHash: z.string().optional(), reviewId: z.string().optional() }).strict(),
  z
    .object({
      accept: z.literal(false),
      reason: z.string(),
      outputHash: z.string().optional(),
      reviewId: z.string().optional(),
    })
    .strict(),
]);

export const eventRecordSchema = z
  .object({
    ...base,
    kind: z.literal('event'),
    event: eventSchema,
    delta: sessionDeltaSchema,
    /** This event replaces the one at that seq (a run stopped for approval continued, or was cancelled there). */
    supersedes: z.number().int().positive().optional(),
    approvals: idRecordSchema(approvalDecisionSchema, 'an object keyed by call id').optional(),
    /** The person's decision on the output the run stopped at for review. */
    review: reviewDecisionSchema.optional(),
  })
  .strict();

/**
 * The fields an event of version 4 or before lacks: it carried every field whole (version 5 carries the changed
 * ones). Checked after decoding, not as a zod refinement, so that an event passing as it is (as-is-check.ts, which
 * leaves refined objects to zod) is still checked.
 */
export function fieldsMissingBefore5(record: z.output<typeof eventRecordSchema>): string[] {
  if (record.schemaVersion >= 5) return [];
  const { fields } = record.delta;
  const missing = allFieldKeys.filter((key) => !(key in fields));
  if (fields.progress.kind === 'changes')
    for (const key of progressChangeKeys) if (!(key in fields.progress)) missing.push(`progress.${key}`);
  return missing;
}

export const modelRecordSchema = z
  .object({
    ...base,
    kind: z.literal('model'),
    afterEvent: z.number().int().min(0),
    index: z.number().int().min(0),
    response: modelResponseSchema,
  })
  .strict();

export const intentRecordSchema = z
  .object({ ...base, kind: z.literal('intent'), key: z.string(), tool: z.string(), args: z.unknown() })
  .strict();

export const toolResultRecordSchema = z
  .object({
    ...base,
    kind: z.literal('tool-result'),
    key: z.string(),
    tool: z.string(),
    outcome: z.union([
      z.object({ kind: z.literal('returned'), text: z.string() }).strict(),
      z.object({ kind: z.literal('threw'), name: z.string(), message: z.string(), callerFault: z.boolean() }).strict(),
    ]),
  })
  .strict();

/**
 * The in-memory trace recorded since the previous snapshot (from index `from`), written with the snapshot
 * after the event at `snapshotSeq`: the snapshot itself holds no trace, so it stays small, and a resume
 * puts the trace back from these chunks. A chunk whose snapshot was never written (the process died in
 * between) is overlapped by the next one, which starts where that snapshot's predecessor ended.
 */
export const traceRecordSchema = z
  .object({
    ...base,
    kind: z.literal('trace'),
    snapshotSeq: z.number().int().min(0),
    from: z.number().int().min(0),
    events: traceSchema,
    /** Written with a stop's run record, not with a snapshot: the trace to its end, for the recorded result (`resultTrace`). */
    final: z.literal(true).optional(),
  })
  .strict();

/**
 * Version 4: the transcript's change since the previous chunk (`previous`, its seq; 0: none, `change` then starts
 * from nothing), written with the snapshot after the event at `snapshotSeq`, which names it. The chunks a resume
 * folds are the chain from the snapshot's own back through `previous`: a chunk whose snapshot was never
 * written (the process died in between) is on no chain, and the resumed run's next chunk continues the one before.
 */
export const transcriptRecordSchema = z
  .object({
    ...base,
    kind: z.literal('transcript'),
    snapshotSeq: z.number().int().min(0),
    previous: z.number().int().min(0),
    change: transcriptChangeSchema,
    /** Version 5: the tracker's triples (the snapshot that names this chunk holds the rest of the tracker). */
    progress: tripleChangesSchema.optional(),
  })
  .strict();

/** What `decodeJournalRecord` reads a journal row with (exported for the as-is check's tests). */
export const journalRecordSchema = z.discriminatedUnion('kind', [
  traceRecordSchema,
  transcriptRecordSchema,
  eventRecordSchema,
  modelRecordSchema,
  intentRecordSchema,
  toolResultRecordSchema,
]);

export const snapshotRecordSchema = z
  .object({
    ...base,
    kind: z.literal('snapshot'),
    /** The actor's persisted snapshot after the event at `seq`. */
    machine: z.looseObject({
      status: z.literal('active'),
      value: z.unknown(),
      context: z.record(z.string(), z.unknown()),
    }),
    session: z
      .object({
        /** Versions 1 and 2: the whole transcript. */
        transcript: transcriptChangeSchema.optional(),
        /** Version 3: the transcript's length and task message, the messages rebuilt from the journal. */
        messages: z.number().int().min(0).optional(),
        taskMessageIndex: z.number().int().nullable().optional(),
        /** Version 4: the seq of the `transcript` chunk written with this snapshot (the transcript is folded from its chain). */
        transcriptChunk: z.number().int().positive().optional(),
        /**
         * The seq of the earliest chunk its chains reach (the transcript's whole chunk or the triples' whole link):
         * a resume reads the transcript chunks from there. Absent (older snapshots, or not known): from the start.
         */
        chainFrom: z.number().int().positive().optional(),
        /** Versions 1 and 2, or without the in-memory trace: the trace whole. Version 3 with it: empty, `traceLength` long in the chunks. */
        trace: traceSchema,
        traceLength: z.number().int().min(0).optional(),
        warnings: z.array(z.string()),
        fields: snapshotFieldsSchema,
      })
      .strict(),
  })
  .strict();

export type EventRecord = z.output<typeof eventRecordSchema>;
export type ModelRecord = z.output<typeof modelRecordSchema>;
export type IntentRecord = z.output<typeof intentRecordSchema>;
export type ToolResultRecord = z.output<typeof toolResultRecordSchema>;
export type TraceRecord = z.output<typeof traceRecordSchema>;
export type TranscriptRecord = z.output<typeof transcriptRecordSchema>;
export type JournalRecord = z.output<typeof journalRecordSchema>;
export type SnapshotRecord = z.output<typeof snapshotRecordSchema>;
export type SessionDelta = z.output<typeof sessionDeltaSchema>;
export type SessionFields = z.output<typeof deltaFieldsSchema>;
export type SnapshotFields = z.output<typeof snapshotFieldsSchema>;
export type TripleChanges = z.output<typeof tripleChangesSchema>;
export type ApprovalDecision = z.output<typeof approvalDecisionSchema>;
export type ReviewDecision = z.output<typeof reviewDecisionSchema>;

export type TranscriptChange = z.output<typeof transcriptChangeSchema>;

/** A person's decisions by call id. */
export type Decisions = ReadonlyMap<string, ApprovalDecision>;
