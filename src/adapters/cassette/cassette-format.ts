/**
 * The cassette file: versioned, pretty-printed JSON small enough to review in git. Each distinct
 * message and tool spec is stored once, in `messages` and `tools`; a recorded call names the ones its
 * request carried by index, so a growing transcript is not copied into every call. Everything in it
 * is already redacted. Reading checks the whole file before any of it is used: the envelope, the
 * version, every reference, and that each request still hashes to its key.
 */
import { z } from 'zod';
import type { ModelErrorKind } from '../../contracts/errors.js';
import { describeZodIssues } from '../../engine/zod-issues.js';
import { modelResponseSchema } from '../../contracts/model-response-schema.js';
import type { ModelFacts } from '../../engine/trace/model-facts.js';
import { CassetteFileError } from './cassette-errors.js';
import { readCassetteText } from './cassette-file.js';
import { tooDeepAt } from './nesting-depth.js';
import { requestKey, type PlainData } from './request-key.js';

/** Names the file as a loopstate cassette, so a stray JSON file is told apart from a damaged one. */
const CASSETTE_FORMAT = 'loopstate-cassette';

// Changelog — 1: message and tool pools, calls keyed by SHA-256 of the redacted request, an occurrence per key, a response, error or interruption, latency.
// Added since (version unchanged, all optional, so older cassettes still read): the model's provider, server and
// settings; a response's metadata (id, model, finish reason) was always kept with the response.
/**
 * The cassette version this loopstate writes and reads; a cassette from a newer version is refused, never half-read.
 * @example
 * JSON.parse(readFileSync('run.json', 'utf8')).schemaVersion === CASSETTE_SCHEMA_VERSION
 */
export const CASSETTE_SCHEMA_VERSION = 1;

/**
 * Levels of arrays and objects a cassette may nest (the top level is 1): far more than messages,
 * tool schemas and responses need, and far less than the recursive walkers that read it can take.
 * @example
 * tooDeepAt(JSON.parse(text), MAX_CASSETTE_DEPTH) === null // the cassette is shallow enough to read
 */
export const MAX_CASSETTE_DEPTH = 256;

const plainRecord = z.record(z.string(), z.json());
/** Every kind, checked by the compiler: a kind added to `ModelErrorKind` must be added here to compile. */
const MODEL_ERROR_KINDS: Record<ModelErrorKind, true> = {
  rate_limited: true,
  server: true,
  timeout: true,
  connection: true,
  bad_request: true,
  auth: true,
  refused: true,
  unknown: true,
};
const modelErrorKind = z.enum(Object.keys(MODEL_ERROR_KINDS) as [ModelErrorKind, ...ModelErrorKind[]]);

/** A failed call as it was thrown: a `ModelCallError` (it has `kind`) or any other error. */
const recordedErrorSchema = z.strictObject({
  name: z.string(),
  message: z.string(),
  code: z.string().optional(),
  kind: modelErrorKind.optional(),
  status: z.number().int().optional(),
  retryAfterMs: z.number().min(0).optional(),
});

const recordedCallSchema = z
  .strictObject({
    /** SHA-256 (hex) of the redacted request's canonical JSON. */
    key: z.string().regex(/^[0-9a-f]{64}$/, 'expected 64 lowercase hex digits'),
    /** How many earlier calls had the same key: a retried identical request replays in order. */
    occurrence: z.number().int().min(0),
    request: z.strictObject({
      messages: z.array(z.number().int().min(0)).optional(),
      tools: z.array(z.number().int().min(0)).optional(),
      /** Any other plain-data fields of the request (`responseFormat`, `settings`, ...). */
      fields: plainRecord.optional(),
    }),
    latencyMs: z.number().min(0),
    /** Extra fields a model adapter returns are kept and replayed. */
    response: modelResponseSchema.loose().optional(),
    error: recordedErrorSchema.optional(),
    /** The call was cut short by a cancel or the run's deadline after `latencyMs`: it has no answer. */
    interrupted: z.enum(['cancelled', 'deadline']).optional(),
  })
  .refine(
    (call) => [call.response, call.error, call.interrupted].filter((outcome) => outcome !== undefined).length === 1,
    {
      message: 'expected exactly one of response, error or interrupted',
    },
  );

const cassetteSchema = z.strictObject({
  schemaVersion: z.literal(CASSETTE_SCHEMA_VERSION),
  format: z.literal(CASSETTE_FORMAT),
  modelId: z.string(),
  contextWindowTokens: z.number().int().positive().optional(),
  /** What the recorded model said about itself, replayed as its own (traces and spans report them). */
  provider: z.string().optional(),
  server: z.strictObject({ address: z.string(), port: z.number().int().optional() }).optional(),
  settings: plainRecord.optional(),
  messages: z.array(plainRecord),
  tools: z.array(plainRecord),
  calls: z.array(recordedCallSchema),
});

/**
 * A cassette as read from or written to disk.
 * @example
 * const cassette: Cassette = readCassette('run.json'); cassette.calls.length;
 */
export type Cassette = z.output<typeof cassetteSchema>;
export type RecordedCall = Cassette['calls'][number];
export type RecordedError = z.output<typeof recordedErrorSchema>;

/**
 * The request a recorded call was made with, rebuilt from the pools (redacted, as stored).
 * @example
 * requestOf(cassette, cassette.calls[0]) // { messages: [...], tools: [...] }
 */
export function requestOf(
  cassette: Pick<Cassette, 'messages' | 'tools'>,
  call: Pick<RecordedCall, 'request'>,
): { [key: string]: PlainData } {
  const { messages, tools, fields } = call.request;
  return {
    ...(fields as { [key: string]: PlainData } | undefined),
    ...(messages === undefined ? {} : { messages: messages.map((index) => cassette.messages[index] as PlainData) }),
    ...(tools === undefined ? {} : { tools: tools.map((index) => cassette.tools[index] as PlainData) }),
  };
}

/**
 * Pretty JSON with two-space indents, except that an array of plain values stays on one line (the
 * index lists of a call would otherwise take a line per number). Key order is the objects' own.
 * @example
 * prettyJson({ messages: [0, 1, 2] }) // '{\n  "messages": [0, 1, 2]\n}'
 */
export function prettyJson(value: unknown, indent = ''): string {
  if (value === null || typeof value !== 'object') return JSON.stringify(value) ?? 'null';
  const inner = `${indent}  `;
  if (Array.isArray(value)) {
    if (value.length === 0) return '[]';
    if (value.every((item) => item === null || typeof item !== 'object'))
      return `[${value.map((item) => JSON.stringify(item) ?? 'null').join(', ')}]`;
    return `[\n${value.map((item) => `${inner}${prettyJson(item, inner)}`).join(',\n')}\n${indent}]`;
  }
  const entries = Object.entries(value).filter(([, item]) => item !== undefined);
  if (entries.length === 0) return '{}';
  return `{\n${entries.map(([key, item]) => `${inner}${JSON.stringify(key)}: ${prettyJson(item, inner)}`).join(',\n')}\n${indent}}`;
}

/**
 * The file text of a cassette, envelope fields first, ending with a newline.
 * @example
 * writeFileSync('run.json', serializeCassette(cassette));
 */
export function serializeCassette(cassette: Cassette): string {
  const { schemaVersion, format, modelId, contextWindowTokens, provider, server, settings, messages, tools, calls } =
    cassette;
  const orderedCalls = calls.map(({ key, occurrence, request, latencyMs, response, error, interrupted }) => ({
    key,
    occurrence,
    request,
    latencyMs,
    response,
    error,
    interrupted,
  }));
  const envelope = { schemaVersion, format, modelId, contextWindowTokens, provider, server, settings };
  return `${prettyJson({ ...envelope, messages, tools, calls: orderedCalls })}\n`;
}

function corrupt(path: string, problem: string, cause?: unknown): CassetteFileError {
  return new CassetteFileError({ code: 'cassette_corrupt', path, problem, cause });
}

/** The envelope first, so a future version is named as such rather than as a wrong shape. */
function checkEnvelope(path: string, data: unknown): void {
  if (
    typeof data !== 'object' ||
    data === null ||
    Array.isArray(data) ||
    (data as { format?: unknown }).format !== CASSETTE_FORMAT
  ) {
    throw corrupt(path, `not a loopstate cassette (expected a JSON object with "format": "${CASSETTE_FORMAT}")`);
  }
  const version = (data as { schemaVersion?: unknown }).schemaVersion;
  if (typeof version === 'number' && Number.isInteger(version) && version > CASSETTE_SCHEMA_VERSION) {
    throw new CassetteFileError({
      code: 'cassette_version_unsupported',
      path,
      problem: `schemaVersion ${version} was written by a newer loopstate; this one reads schemaVersion ${CASSETTE_SCHEMA_VERSION}`,
    });
  }
}

/** References in range, and each request still hashing to its key with the occurrence its position gives. */
function checkCalls(path: string, cassette: Cassette): void {
  const seen = new Map<string, number>();
  cassette.calls.forEach((call, index) => {
    for (const pool of ['messages', 'tools'] as const) {
      const bad = call.request[pool]?.find((reference) => reference >= cassette[pool].length);
      if (bad !== undefined)
        throw corrupt(
          path,
          `calls[${index}].request.${pool} refers to ${pool}[${bad}], but there are ${cassette[pool].length}`,
        );
    }
    const key = requestKey(requestOf(cassette, call));
    if (key !== call.key)
      throw corrupt(
        path,
        `calls[${index}].key does not match its request (the request was edited, or the key was); record the cassette again`,
      );
    const occurrence = seen.get(key) ?? 0;
    if (call.occurrence !== occurrence)
      throw corrupt(
        path,
        `calls[${index}].occurrence is ${call.occurrence}, but ${occurrence} earlier calls have its key`,
      );
    seen.set(key, occurrence + 1);
  });
}

/**
 * Reads and checks a cassette file, all or nothing; throws `CassetteFileError` naming the path and
 * the problem: missing, unreadable, not a regular file, too large, not JSON (e.g. cut short), not a
 * cassette, a newer version, nested deeper than `MAX_CASSETTE_DEPTH`, a field of the wrong shape
 * (named by its path), or a request edited away from its key.
 * @example
 * const cassette = readCassette('test/cassettes/order-status.json');
 */
export function readCassette(path: string): Cassette {
  const text = readCassetteText(path);
  let data: unknown;
  try {
    data = JSON.parse(text);
  } catch (error) {
    throw corrupt(path, `is not valid JSON, perhaps cut short (${(error as Error).message})`, error);
  }
  checkEnvelope(path, data);
  // Before the schema: validating, hashing and diffing all recurse, and would overflow the stack first.
  const tooDeep = tooDeepAt(data, MAX_CASSETTE_DEPTH);
  if (tooDeep !== null)
    throw corrupt(
      path,
      `${tooDeep} nests more than ${MAX_CASSETTE_DEPTH} levels deep; recordModel never writes such a cassette`,
    );
  const checked = cassetteSchema.safeParse(data);
  if (!checked.success) throw corrupt(path, describeZodIssues(checked.error.issues).join('; '));
  checkCalls(path, checked.data);
  return checked.data;
}

/**
 * An empty cassette for a model.
 * @example
 * const cassette = emptyCassette('gpt-4.1-mini', 128_000);
 */
export function emptyCassette(
  modelId: string,
  contextWindowTokens: number | undefined,
  facts: ModelFacts = {},
): Cassette {
  return {
    schemaVersion: CASSETTE_SCHEMA_VERSION,
    format: CASSETTE_FORMAT,
    modelId,
    // createLoop refuses any other window anyway; a bad one is left out so the file stays readable.
    ...(typeof contextWindowTokens === 'number' && Number.isSafeInteger(contextWindowTokens) && contextWindowTokens > 0
      ? { contextWindowTokens }
      : {}),
    ...facts,
    messages: [],
    tools: [],
    calls: [],
  };
}
