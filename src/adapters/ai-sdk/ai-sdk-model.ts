/**
 * `aiSdkModel`: a `Model` on any AI SDK language model (`LanguageModelV2` of AI SDK 5's providers,
 * `LanguageModelV3` of AI SDK 6's): Anthropic, Google, Bedrock, Mistral, Groq, an OpenAI-compatible server...
 * The model is called through its own `doGenerate` / `doStream`; `ai` itself is not needed, and nothing of
 * `@ai-sdk/provider` is loaded at run time (its errors are recognised by their marker symbols).
 */
import type {
  LanguageModelV2,
  LanguageModelV3,
  LanguageModelV3CallOptions,
  LanguageModelV3GenerateResult,
  LanguageModelV3StreamResult,
} from '@ai-sdk/provider';
import { z } from 'zod';
import { LoopConfigError, ModelCallError } from '../../contracts/errors.js';
import { modelSettingsSchema } from '../../contracts/model-settings-schema.js';
import type {
  Model,
  ModelProgress,
  ModelRequest,
  ModelResponse,
  ModelServer,
  ModelSettings,
} from '../../contracts/model.js';
import { AI_SDK_DEFAULTS } from '../../engine/constants.js';
import { toCallOptions } from './call-options.js';
import { classifyAiSdkError } from './classify-error.js';
import { genAiProviderName, serverOfModel } from './provider-name.js';
import { readStream } from './read-stream.js';
import { partsOfContent, responseIdentity, toModelResponse, type ReplyParts } from './response.js';

/**
 * An AI SDK language model, as `aiSdkModel` takes it: a `LanguageModelV2` or `LanguageModelV3` from any
 * installed copy of `@ai-sdk/provider` 2 or 3 (what `anthropic('claude-sonnet-4-5')` returns, or
 * `MockLanguageModelV3` of `ai/test`). Only these members are read.
 * @example
 * const languageModel: AiSdkLanguageModel = createAnthropic({ apiKey })('claude-sonnet-4-5');
 */
export interface AiSdkLanguageModel {
  readonly specificationVersion: string;
  /** The AI SDK's provider string, e.g. `anthropic.messages` or `openai.chat`. */
  readonly provider: string;
  readonly modelId: string;
  // Parameters typed `never`: any specification's call options are accepted; aiSdkModel builds them.
  doGenerate(options: never): PromiseLike<unknown>;
  doStream(options: never): PromiseLike<unknown>;
}

/**
 * Options of `aiSdkModel`; all optional, and `undefined` means the default.
 * @example
 * const options: AiSdkModelOptions = { stream: true, settings: { temperature: 0, maxOutputTokens: 1_000 } };
 */
export interface AiSdkModelOptions {
  /** Stream the reply through `doStream` (default false): text deltas and tool-call starts reach `trace.onEvent` as they arrive. */
  stream?: boolean;
  /**
   * Sampling and length settings of every call; a request's own `settings` win over them. `reasoningEffort`
   * has no portable AI SDK option and is not sent: give it in `providerOptions` in the provider's own terms.
   */
  settings?: ModelSettings;
  /** Ask for the task's answer schema as structured output (`responseFormat: { type: 'json', schema }`; default true). */
  structuredOutput?: boolean;
  /** Provider-specific options sent with every call, keyed by provider (`{ anthropic: { thinking: { type: 'enabled', budgetTokens: 2048 } } }`). */
  providerOptions?: Record<string, Record<string, unknown>>;
  /** Extra HTTP headers on every call, over the provider's own. */
  headers?: Record<string, string>;
  /** Input tokens one request may carry, when you know the model's window (sets the default context ceiling). */
  contextWindowTokens?: number;
  /** OpenTelemetry's `gen_ai.provider.name`, when the one read from the provider string is not right. */
  provider?: string;
  /** The server the provider talks to, when it cannot be read from the model (OpenTelemetry's `server.*`). */
  server?: ModelServer;
}

const optionsSchema = z
  .object({
    stream: z.boolean(),
    settings: modelSettingsSchema,
    structuredOutput: z.boolean(),
    providerOptions: z.record(z.string(), z.record(z.string(), z.unknown())),
    headers: z.record(z.string(), z.string()),
    contextWindowTokens: z.number().int().positive(),
    provider: z.string().trim().min(1),
    server: z.object({ address: z.string().min(1), port: z.number().int().min(1).max(65_535).optional() }).strict(),
  })
  .partial()
  .strict();

/** A field set to `undefined` means its default, so it is dropped before validation. */
function withoutUndefined(value: unknown): unknown {
  if (typeof value !== 'object' || value === null || Array.isArray(value)) return value;
  return Object.fromEntries(
    Object.entries(value)
      .filter(([, field]) => field !== undefined)
      .map(([key, field]) => [key, key === 'headers' || key === 'providerOptions' ? field : withoutUndefined(field)]),
  );
}

const configError = (path: string, message: string) =>
  new LoopConfigError({ issues: [{ path: `aiSdkModel.${path}`, message }] });

function parseOptions(options: unknown): z.output<typeof optionsSchema> {
  const parsed = optionsSchema.safeParse(withoutUndefined(options ?? {}));
  if (parsed.success) return parsed.data;
  throw new LoopConfigError({
    issues: parsed.error.issues.map((issue) => ({
      path: [
        'aiSdkModel',
        ...issue.path.map(String),
        ...(issue.code === 'unrecognized_keys' ? [issue.keys.join(', ')] : []),
      ].join('.'),
      message: issue.code === 'unrecognized_keys' ? 'unknown option' : issue.message,
    })),
  });
}

const SUPPORTED =
  "an AI SDK LanguageModelV2 or LanguageModelV3 (a provider of AI SDK 5 or 6, e.g. anthropic('claude-sonnet-4-5'))";

/** The model, checked before any call: the specification it implements and the members the adapter uses. */
function checkLanguageModel(languageModel: unknown): LanguageModelV2 | LanguageModelV3 {
  if (typeof languageModel !== 'object' || languageModel === null)
    throw configError('languageModel', `expected ${SUPPORTED}`);
  const candidate = languageModel as Partial<
    Record<'specificationVersion' | 'provider' | 'modelId' | 'doGenerate' | 'doStream', unknown>
  >;
  const version = candidate.specificationVersion;
  if (version !== 'v2' && version !== 'v3') {
    const which =
      version === 'v1'
        ? 'LanguageModelV1 (AI SDK 4) is not supported: use the provider package of AI SDK 5 or 6'
        : `specificationVersion ${JSON.stringify(version)} is not supported (AI SDK 7's providers are not yet): use the provider package of AI SDK 5 or 6`;
    throw configError('languageModel.specificationVersion', `${which}; expected ${SUPPORTED}`);
  }
  for (const field of ['provider', 'modelId'] as const)
    if (typeof candidate[field] !== 'string' || candidate[field] === '')
      throw configError(`languageModel.${field}`, `expected a non-empty string; expected ${SUPPORTED}`);
  for (const method of ['doGenerate', 'doStream'] as const)
    if (typeof candidate[method] !== 'function')
      throw configError(`languageModel.${method}`, `expected a function; expected ${SUPPORTED}`);
  return languageModel as LanguageModelV2 | LanguageModelV3;
}

/** A model whose result lacks what its specification promises: fatal, asking again brings the same. */
const notAReply = (id: string, method: string, missing: string) =>
  new ModelCallError({ kind: 'unknown', message: `${id} returned from ${method} without ${missing}` });

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
 * A `Model` on an AI SDK language model. Its `id` is `provider:modelId` (`anthropic.messages:claude-sonnet-4-5`),
 * its `provider` OpenTelemetry's name for the provider (`anthropic`, `openai`, `gcp.gemini`, `aws.bedrock`...).
 * The transcript becomes the provider prompt (tool results carry their tool's name), tools become function
 * tools, the task's answer schema a JSON response format, the settings call options, the loop's signal the
 * abort signal. AI SDK providers retry nothing themselves (only the `ai` package's functions do), so the loop's
 * transport layer is the one retry layer: an `APICallError` becomes a `ModelCallError` by its status and
 * `isRetryable` (429 with its Retry-After, 408, 409, 5xx and connection failures are retried; 400, 401, 403,
 * 404 and 422 are fatal), a missing API key a `LoopConfigError` naming the environment variable, a
 * content-filtered reply a fatal `refused` error. With `stream: true` the reply comes through `doStream`, and
 * ends the same as unstreamed: same text, tool calls and usage.
 * @example
 * import { createAnthropic } from '@ai-sdk/anthropic';
 * const model = aiSdkModel(createAnthropic()('claude-sonnet-4-5'), { stream: true, settings: { temperature: 0 } });
 * const loop = createLoop({ model, tools: [getOrderStatus] });
 */
export function aiSdkModel(languageModel: AiSdkLanguageModel, options?: AiSdkModelOptions): Model {
  const checked = checkLanguageModel(languageModel);
  const parsed = parseOptions(options);
  const id = `${checked.provider}:${checked.modelId}`;
  const stream = parsed.stream ?? AI_SDK_DEFAULTS.stream;
  const structuredOutput = parsed.structuredOutput ?? AI_SDK_DEFAULTS.structuredOutput;
  const server = parsed.server ?? serverOfModel(checked);
  const provider = parsed.provider ?? genAiProviderName(checked.provider);
  // V2 and V3 call options agree on every part built here (text, tool calls, text tool results).
  const callModel = checked as LanguageModelV3;

  async function generate(request: ModelRequest): Promise<ModelResponse> {
    request.signal.throwIfAborted();
    const callOptions: LanguageModelV3CallOptions = toCallOptions({
      request,
      settings: parsed.settings,
      structuredOutput,
      providerOptions: parsed.providerOptions as LanguageModelV3CallOptions['providerOptions'],
      headers: parsed.headers,
    });
    const facts = { signal: request.signal, where: id, now: Date.now() };
    let parts: ReplyParts;
    try {
      if (stream) {
        const result: Partial<LanguageModelV3StreamResult> | null | undefined = await callModel.doStream(callOptions);
        if (typeof result?.stream?.getReader !== 'function') throw notAReply(id, 'doStream', 'a stream');
        parts = await readStream(result.stream, {
          progress: safeProgress(request.onProgress),
          facts,
          provider: checked.provider,
        });
      } else {
        const result: Partial<LanguageModelV3GenerateResult> | null | undefined =
          await callModel.doGenerate(callOptions);
        if (!Array.isArray(result?.content)) throw notAReply(id, 'doGenerate', 'its content');
        parts = {
          ...partsOfContent(result.content),
          finishReason: result.finishReason,
          usage: result.usage,
          ...responseIdentity(result.response),
        };
      }
    } catch (error) {
      throw classifyAiSdkError(error, { ...facts, now: Date.now() });
    }
    return toModelResponse(parts, {
      messages: request.messages,
      tools: request.tools,
      provider: checked.provider,
      where: id,
    });
  }

  return {
    id,
    // gen_ai.request.model is the provider's model name, not our provider-prefixed id.
    modelName: checked.modelId,
    provider,
    ...(server === null ? {} : { server }),
    ...(parsed.contextWindowTokens === undefined ? {} : { contextWindowTokens: parsed.contextWindowTokens }),
    // Reported on spans as gen_ai.request.* (the request's own settings win over these per call).
    ...(parsed.settings === undefined ? {} : { settings: parsed.settings }),
    generate,
  };
}
