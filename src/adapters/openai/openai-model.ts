/**
 * `openaiModel`: a `Model` on the official `openai` client, for OpenAI and any OpenAI-compatible
 * server (Ollama, vLLM, llama.cpp) through `baseURL`. The client never retries (`maxRetries: 0`):
 * the loop's transport layer owns retries, so one failure class has one counter and one backoff.
 */
import { loadOpenAI } from './load-openai.js';
import { z } from 'zod';
import { CHARS_PER_TOKEN_ESTIMATE, OPENAI_DEFAULTS } from '../../engine/constants.js';
import { LoopConfigError, ModelCallError } from '../../contracts/errors.js';
import { modelSettingsSchema } from '../../contracts/model-settings-schema.js';
import { MAX_TIMER_MS } from '../../engine/config/config-schema.js';
import type {
  Message,
  Model,
  ModelProgress,
  ModelFinishReason,
  ModelRequest,
  ModelResponse,
  ModelResponseMetadata,
  ModelServer,
  ModelSettings,
  ModelUsage,
  ToolSpec,
} from '../../contracts/model.js';
import { watchCall, type FetchFunction } from './call-watchdog.js';
import { callChat, type ApiCall, type ApiOutcome } from './chat-api.js';
import { classifyOpenAIError, type CallFacts } from './classify-error.js';
import { toOpenAIFormat, withoutAddedNulls } from './json-schema-format.js';
import { guardRedirects, type RedirectPolicy } from './redirect-guard.js';
import { callResponses } from './responses-api.js';
import { copyModelError, modelSecrets, scrubModelError, scrubSecrets } from './secret-scrub.js';

/**
 * Options of `openaiModel`; only `model` is required, and `undefined` means the default.
 * @example
 * const options: OpenAIModelOptions = { model: 'gpt-4.1-mini', stream: true, settings: { temperature: 0 } };
 */
export interface OpenAIModelOptions {
  /** The model id sent to the server, also used for pricing and traces (`gpt-4.1-mini`, `llama3.1:8b`). */
  model: string;
  /**
   * Defaults to `OPENAI_API_KEY` for OpenAI's API (or the server `OPENAI_BASE_URL` names). Another
   * `baseURL` given here (a local server) needs none and is never sent `OPENAI_API_KEY`: pass its key here.
   */
  apiKey?: string;
  /** Defaults to `OPENAI_BASE_URL`, else OpenAI's; e.g. `http://127.0.0.1:11434/v1` for Ollama. */
  baseURL?: string;
  organization?: string;
  /** `chat` (Chat Completions, default; what compatible servers speak) or `responses`. */
  api?: 'chat' | 'responses';
  /**
   * Whole-call bound in ms, headers and body (default 600 000). Inside a loop each call is also bounded
   * by `limits.modelCallTimeoutMs`; whichever is shorter ends it, as a `timeout` the loop retries.
   */
  timeoutMs?: number;
  /** Longest silence in ms once the headers are in, re-armed on every chunk of the body (default 30 000). */
  idleTimeoutMs?: number;
  /** Stream the reply (default false): text deltas and tool-call starts reach `trace.onEvent` as they arrive. */
  stream?: boolean;
  /**
   * Extra HTTP headers on every request (Azure's `api-key`, a gateway's or a proxy's credential). Every
   * value is treated as a secret: scrubbed, like the key, from every message the model reports.
   */
  headers?: Record<string, string>;
  /**
   * Bytes one response body may have (default 16 MiB), counted as it streams in: past them the call fails
   * for good (`fatal_error`, naming the limit), and a body that says its length is refused before it is read.
   */
  maxResponseBytes?: number;
  /**
   * `refuse` (default): a redirect fails the call, naming its Location; nothing is sent after it.
   * `same-origin`: a 301, 302, 307 or 308 to the same scheme, host and port is followed (up to 5 in a
   * row) with the same request, body and headers; one to another origin is still refused.
   */
  redirects?: RedirectPolicy;
  /** Sampling and length settings of every call; a request's own `settings` win over them. */
  settings?: ModelSettings;
  /** Ask for the task's answer schema as structured output (`response_format: json_schema`; default true). */
  structuredOutput?: boolean;
  /** Input tokens one request may carry, when you know the model's window (sets the default context ceiling). */
  contextWindowTokens?: number;
  /**
   * The provider traces and spans report (`gen_ai.provider.name`). Defaults to `openai`, the API this client
   * speaks, whatever server answers (`azure.ai.openai` for an `*.openai.azure.com` host); name the vendor
   * behind an OpenAI-compatible endpoint here (`groq`, `deepseek`, `x_ai`, ...) if you want it reported.
   */
  provider?: string;
}

const positiveMs = z
  .number()
  .int()
  .positive()
  .max(MAX_TIMER_MS, `must be at most ${MAX_TIMER_MS} ms, the longest timer Node supports`);
const baseURLSchema = z
  .url({ protocol: /^https?$/, error: 'expected an http(s) URL, e.g. "http://127.0.0.1:11434/v1"' })
  // fetch refuses such a URL on every call; better said once, here.
  .refine((url) => {
    const parsed = new URL(url);
    return parsed.username === '' && parsed.password === '';
  }, 'must not carry user:password@ (fetch refuses it); send credentials with `headers` or `apiKey`');
const optionsSchema = z
  .object({
    model: z.string().trim().min(1, 'expected the model id, e.g. "gpt-4.1-mini"'),
    apiKey: z.string().min(1, 'expected a non-empty key, or leave it out to use OPENAI_API_KEY').optional(),
    baseURL: baseURLSchema.optional(),
    organization: z.string().min(1).optional(),
    api: z.enum(['chat', 'responses']).optional(),
    timeoutMs: positiveMs.optional(),
    idleTimeoutMs: positiveMs.optional(),
    stream: z.boolean().optional(),
    headers: z.record(z.string(), z.string()).optional(),
    maxResponseBytes: z.number().int().positive().max(Number.MAX_SAFE_INTEGER).optional(),
    redirects: z.enum(['refuse', 'same-origin'], { error: "expected 'refuse' or 'same-origin'" }).optional(),
    settings: modelSettingsSchema.optional(),
    structuredOutput: z.boolean().optional(),
    contextWindowTokens: z.number().int().positive().optional(),
    provider: z.string().trim().min(1, 'expected a provider name, e.g. "openai"').optional(),
  })
  .strict();

/** A field set to `undefined` means its default, so it is dropped before validation. */
function withoutUndefined(value: unknown): unknown {
  if (typeof value !== 'object' || value === null || Array.isArray(value)) return value;
  return Object.fromEntries(
    Object.entries(value)
      .filter(([, field]) => field !== undefined)
      .map(([key, field]) => [key, key === 'headers' ? field : withoutUndefined(field)]),
  );
}

function parseOptions(options: unknown): z.output<typeof optionsSchema> {
  const parsed = optionsSchema.safeParse(withoutUndefined(options));
  if (parsed.success) return parsed.data;
  throw new LoopConfigError({
    issues: parsed.error.issues.map((issue) => ({
      path: [
        'openaiModel',
        ...issue.path.map(String),
        ...(issue.code === 'unrecognized_keys' ? [issue.keys.join(', ')] : []),
      ].join('.'),
      // zod's messages name types, never values: a bad key is not echoed back.
      message: issue.code === 'unrecognized_keys' ? 'unknown option' : issue.message,
    })),
  });
}

const OPENAI_HOSTS = /(^|\.)openai\.com$/i;
const AZURE_OPENAI_HOSTS = /\.openai\.azure\.com$/i;

/** Where requests go, for traces: the host and the port (the scheme's when the URL names none). */
function serverOf(baseURL: string): ModelServer {
  const url = new URL(baseURL);
  const port = url.port === '' ? (url.protocol === 'https:' ? 443 : 80) : Number(url.port);
  // The URL parser keeps an IPv6 host in brackets; server.address is the bare address.
  return { address: url.hostname.replace(/^\[(.*)\]$/, '$1'), port };
}

/** The provider traces report: the API this client speaks, unless the host says Azure's or the options say otherwise. */
const providerOf = (baseURL: string, given: string | undefined): string =>
  given ?? (AZURE_OPENAI_HOSTS.test(new URL(baseURL).hostname) ? 'azure.ai.openai' : 'openai');

/** The server's finish reason in the contract's vocabulary; the server's own word kept when it differs. */
function finishReasonOf(raw: string | null): Pick<ModelResponseMetadata, 'finishReason' | 'rawFinishReason'> {
  if (raw === null) return {};
  const mapped: ModelFinishReason =
    raw === 'stop' || raw === 'length' || raw === 'tool_calls' || raw === 'content_filter'
      ? raw
      : raw === 'function_call'
        ? 'tool_calls'
        : 'other';
  return mapped === raw ? { finishReason: mapped } : { finishReason: mapped, rawFinishReason: raw };
}

/** The host OpenAI runs, or anything else (a local or third-party OpenAI-compatible server). */
const isHostedByOpenAI = (baseURL: string): boolean => OPENAI_HOSTS.test(new URL(baseURL).hostname);

/** OPENAI_BASE_URL when set (checked like the option), else OpenAI's API. */
function environmentBaseURL(): string {
  const fromEnvironment = process.env.OPENAI_BASE_URL;
  if (!fromEnvironment) return 'https://api.openai.com/v1';
  const checked = baseURLSchema.safeParse(fromEnvironment);
  if (!checked.success) {
    throw new LoopConfigError({
      issues: [
        {
          path: 'openaiModel.baseURL',
          message: `from the OPENAI_BASE_URL environment variable: ${checked.error.issues[0]?.message ?? 'invalid'}; fix it or pass baseURL`,
        },
      ],
    });
  }
  return fromEnvironment;
}

/** Sent as the key to a server that needs none: the client insists on some key. */
const NO_KEY = 'no-key';

/** Token counts from characters when a server reports no usage, so budgets still see the spend. */
function estimatedUsage(messages: readonly Message[], tools: readonly ToolSpec[], outcome: ApiOutcome): ModelUsage {
  const inputChars = JSON.stringify(messages).length + JSON.stringify(tools).length;
  const outputChars =
    (outcome.text ?? '').length +
    outcome.toolCalls.reduce((sum, call) => sum + call.name.length + call.arguments.length, 0);
  return {
    inputTokens: Math.ceil(inputChars / CHARS_PER_TOKEN_ESTIMATE),
    outputTokens: Math.ceil(outputChars / CHARS_PER_TOKEN_ESTIMATE),
  };
}

/** A user's progress callback must never break the call it watches. */
function safeProgress(onProgress: ModelRequest['onProgress']): (progress: ModelProgress) => void {
  if (onProgress === undefined) return () => undefined;
  return (progress) => {
    try {
      onProgress(progress);
    } catch {
      // Progress is a preview; the final response still arrives.
    }
  };
}

/**
 * A `Model` on the official `openai` client (Chat Completions by default, the Responses API with
 * `api: 'responses'`). Transient failures (429 with its Retry-After, 408, 409, 5xx, connection
 * errors, timeouts, a body cut short or garbled, a stream that ends early) are thrown as retryable
 * `ModelCallError`s for the loop's transport retry; 400, 401, 403, 404 and 422 as fatal ones whose
 * message names the cause and never a credential (the key, or any header value given here). A reply
 * bigger than `maxResponseBytes` and a redirect (unless `redirects: 'same-origin'` follows it) are fatal
 * too. Usage the server reported before a call failed rides on the error, so the loop counts it. A
 * refusal or a content-filtered reply is a fatal `ModelCallError` of kind `refused` (code
 * `model_refused`), its reason in the message. Without
 * `apiKey` or `OPENAI_API_KEY`, OpenAI's own API is a `LoopConfigError` at once; any other
 * `baseURL` (a local server) goes without a key, and is never sent `OPENAI_API_KEY`.
 * @example
 * const loop = createLoop({ model: openaiModel({ model: 'gpt-4.1-mini', stream: true }), tools: [getOrderStatus] });
 * const local = openaiModel({ model: 'llama3.1:8b', baseURL: 'http://127.0.0.1:11434/v1' }); // Ollama, no key
 */
export function openaiModel(options: OpenAIModelOptions): Model {
  const parsed = parseOptions(options);
  const baseURL = parsed.baseURL ?? environmentBaseURL();
  const hostedByOpenAI = isHostedByOpenAI(baseURL);
  // OPENAI_API_KEY goes to OpenAI, or to the server OPENAI_BASE_URL names; never to another baseURL
  // given in code, which gets only a key given in code.
  const envKeyApplies = hostedByOpenAI || parsed.baseURL === undefined;
  const apiKey =
    parsed.apiKey ??
    (envKeyApplies ? process.env.OPENAI_API_KEY || undefined : undefined) ??
    (hostedByOpenAI ? undefined : NO_KEY);
  if (apiKey === undefined) {
    throw new LoopConfigError({
      issues: [
        {
          path: 'openaiModel.apiKey',
          message: `no API key for ${baseURL}: pass apiKey or set the OPENAI_API_KEY environment variable`,
        },
      ],
    });
  }
  const api = parsed.api ?? OPENAI_DEFAULTS.api;
  const timeoutMs = parsed.timeoutMs ?? OPENAI_DEFAULTS.timeoutMs;
  const idleTimeoutMs = parsed.idleTimeoutMs ?? OPENAI_DEFAULTS.idleTimeoutMs;
  const stream = parsed.stream ?? OPENAI_DEFAULTS.stream;
  const structuredOutput = parsed.structuredOutput ?? OPENAI_DEFAULTS.structuredOutput;
  const maxResponseBytes = parsed.maxResponseBytes ?? OPENAI_DEFAULTS.maxResponseBytes;
  const redirects = parsed.redirects ?? OPENAI_DEFAULTS.redirects;
  // The placeholder sent to a server that needs no key is no secret: "no-key" stays readable.
  const secrets = modelSecrets(apiKey === NO_KEY ? null : apiKey, parsed.headers);
  const facts: CallFacts = { secrets, baseURL, model: parsed.model, redirects };
  const where = `${parsed.model} at ${baseURL}`;
  const { OpenAI } = loadOpenAI();
  const client = new OpenAI({
    apiKey,
    baseURL,
    ...(parsed.organization === undefined ? {} : { organization: parsed.organization }),
    ...(parsed.headers === undefined ? {} : { defaultHeaders: parsed.headers }),
    // One retry layer: ours. The client's would multiply attempts and sleep an uncapped Retry-After.
    maxRetries: 0,
    // Our watchdog bounds the whole call; the client's timer would cover only the wait for headers.
    timeout: MAX_TIMER_MS,
    // Failures reach the caller as errors; the client's own logging would print them twice.
    ...(process.env.OPENAI_LOG ? {} : { logLevel: 'off' as const }),
  });
  const baseFetch: FetchFunction = guardRedirects((input, init) => globalThis.fetch(input, init), redirects);

  async function generate(request: ModelRequest): Promise<ModelResponse> {
    request.signal.throwIfAborted();
    const watchdog = watchCall({
      signal: request.signal,
      timeoutMs,
      idleTimeoutMs,
      maxResponseBytes,
      fetch: baseFetch,
      where,
    });
    let reportedUsage: ModelUsage | null = null;
    // Every failure leaves scrubbed of the credentials, carrying the usage the server reported (it billed it).
    const failure = (error: unknown): unknown => {
      const scrubbed = scrubModelError(error, secrets);
      return reportedUsage !== null && ModelCallError.is(scrubbed) && scrubbed.usage === undefined
        ? copyModelError(scrubbed, { usage: reportedUsage })
        : scrubbed;
    };
    const format =
      structuredOutput && request.responseFormat !== undefined
        ? toOpenAIFormat(request.responseFormat.name, request.responseFormat.schema)
        : null;
    const call: ApiCall = {
      // A client per call carries this call's watchdog into its fetch; the options are shared.
      client: client.withOptions({ fetch: watchdog.fetch }),
      model: parsed.model,
      messages: request.messages,
      tools: request.tools,
      settings: { ...parsed.settings, ...request.settings },
      format,
      stream,
      signal: watchdog.signal,
      hostedByOpenAI,
      touch: watchdog.touch,
      progress: safeProgress(request.onProgress),
      where,
      contentType: () => watchdog.contentType,
      reportUsage: (usage) => void (reportedUsage = usage),
      scrub: (text) => scrubSecrets(text, secrets),
    };
    let outcome: ApiOutcome;
    try {
      outcome = api === 'chat' ? await callChat(call) : await callResponses(call);
    } catch (error) {
      throw failure(classifyOpenAIError(error, { callSignal: watchdog.signal, facts, now: Date.now() }));
    } finally {
      watchdog.dispose();
    }
    try {
      return toModelResponse(
        outcome,
        request,
        format === null || !format.strict ? null : (request.responseFormat?.schema ?? null),
        where,
      );
    } catch (error) {
      throw failure(error);
    }
  }

  return {
    id: parsed.model,
    provider: providerOf(baseURL, parsed.provider),
    server: serverOf(baseURL),
    ...(parsed.settings === undefined ? {} : { settings: Object.freeze({ ...parsed.settings }) }),
    ...(parsed.contextWindowTokens === undefined ? {} : { contextWindowTokens: parsed.contextWindowTokens }),
    generate,
  };
}

function toModelResponse(
  outcome: ApiOutcome,
  request: ModelRequest,
  strictSchema: Record<string, unknown> | null,
  where: string,
): ModelResponse {
  if (outcome.refusal !== null && outcome.toolCalls.length === 0) {
    throw new ModelCallError({
      kind: 'refused',
      message: `${where} refused to answer: ${outcome.refusal}`,
      ...(outcome.usage === null ? {} : { usage: outcome.usage }),
    });
  }
  if (outcome.finishReason === 'content_filter') {
    throw new ModelCallError({
      kind: 'refused',
      message: `${where} withheld the reply: its content filter stopped it (finish reason content_filter)`,
      ...(outcome.usage === null ? {} : { usage: outcome.usage }),
    });
  }
  const text =
    outcome.text !== null && strictSchema !== null ? withoutAddedNulls(outcome.text, strictSchema) : outcome.text;
  const metadata: ModelResponseMetadata = {
    ...(outcome.id === null ? {} : { id: outcome.id }),
    ...(outcome.model === null ? {} : { model: outcome.model }),
    ...finishReasonOf(outcome.finishReason),
  };
  return {
    text,
    toolCalls: outcome.toolCalls,
    usage: outcome.usage ?? estimatedUsage(request.messages, request.tools, outcome),
    ...(Object.keys(metadata).length === 0 ? {} : { metadata }),
  };
}
