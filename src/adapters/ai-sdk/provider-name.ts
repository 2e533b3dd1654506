/**
 * Who an AI SDK model is, in loopstate's terms: the `Model.id` (`anthropic.messages:claude-sonnet-4-5`), the
 * provider as OpenTelemetry's `gen_ai.provider.name` spells it, and the server it talks to when the model
 * lets that be read.
 */
import type { ModelServer } from '../../contracts/model.js';

/**
 * The AI SDK's provider names (their first segment, `anthropic` of `anthropic.messages`) that OpenTelemetry's
 * GenAI registry spells otherwise. A name not listed here is used as it is (`groq`, `deepseek`, `cohere`,
 * `perplexity`, or an OpenAI-compatible provider's own name).
 */
const PROVIDER_NAMES: Readonly<Record<string, string>> = {
  anthropic: 'anthropic',
  openai: 'openai',
  azure: 'azure.ai.openai',
  google: 'gcp.gemini',
  'google-vertex': 'gcp.vertex_ai',
  vertex: 'gcp.vertex_ai',
  'amazon-bedrock': 'aws.bedrock',
  bedrock: 'aws.bedrock',
  mistral: 'mistral_ai',
  xai: 'x_ai',
  groq: 'groq',
  deepseek: 'deepseek',
  cohere: 'cohere',
  perplexity: 'perplexity',
};

/** Provider strings whose second segment names the cloud the model runs in (`google.vertex.chat`). */
const BY_TWO_SEGMENTS: Readonly<Record<string, string>> = {
  'google.vertex': 'gcp.vertex_ai',
  'google.generative-ai': 'gcp.gemini',
};

/**
 * OpenTelemetry's `gen_ai.provider.name` for an AI SDK provider string.
 * @example
 * genAiProviderName('anthropic.messages') // 'anthropic'
 * genAiProviderName('google.generative-ai') // 'gcp.gemini'
 * genAiProviderName('my-gateway.chat') // 'my-gateway'
 */
export function genAiProviderName(provider: string): string {
  const segments = provider.split('.');
  const twoSegments = segments.slice(0, 2).join('.');
  const first = segments[0] ?? provider;
  return (
    (Object.hasOwn(BY_TWO_SEGMENTS, twoSegments) ? BY_TWO_SEGMENTS[twoSegments] : undefined) ??
    (Object.hasOwn(PROVIDER_NAMES, first) ? PROVIDER_NAMES[first] : undefined) ??
    first
  );
}

const DEFAULT_PORTS: Readonly<Record<string, number>> = { 'https:': 443, 'http:': 80 };

/** `server.address` and `server.port` of a URL; null for anything that is not an http(s) URL. */
export function serverOf(url: string): ModelServer | null {
  let parsed: URL;
  try {
    parsed = new URL(url);
  } catch {
    return null;
  }
  const port = parsed.port === '' ? DEFAULT_PORTS[parsed.protocol] : Number(parsed.port);
  if (port === undefined) return null;
  // An IPv6 host comes back bracketed; the attribute holds the address itself.
  return { address: parsed.hostname.replace(/^\[(.*)\]$/, '$1'), port };
}

/**
 * The server an AI SDK model sends its requests to, read from the provider's own configuration where the
 * providers keep it (`config.baseURL`, or `config.url({ path, modelId })` of the OpenAI-compatible ones).
 * That configuration is no public API: anything unexpected gives null, and the `Model` goes without `server`.
 */
export function serverOfModel(model: object): ModelServer | null {
  try {
    const config = (model as { config?: unknown }).config;
    if (typeof config !== 'object' || config === null) return null;
    const { baseURL, url } = config as { baseURL?: unknown; url?: unknown };
    if (typeof baseURL === 'string') return serverOf(baseURL);
    if (typeof url === 'function') {
      const modelId = (model as { modelId?: unknown }).modelId;
      const built: unknown = url.call(config, { path: '/chat/completions', modelId });
      return typeof built === 'string' ? serverOf(built) : null;
    }
    return null;
  } catch {
    return null;
  }
}
