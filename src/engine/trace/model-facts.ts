/**
 * What a model says about itself (provider, server, settings), read for the trace. A custom model may
 * set anything there: only well-formed values are kept, so a stray field can never break a trace.
 */
import type {
  Model,
  ModelFinishReason,
  ModelResponseMetadata,
  ModelServer,
  ModelSettings,
} from '../../contracts/model.js';

/** The model's facts as `run-start` records them; a field is absent when the model does not say (or says nonsense). */
export interface ModelFacts {
  provider?: string;
  server?: ModelServer;
  settings?: TracedSettings;
}

/** Settings as a trace holds them (a plain array of stop sequences). */
type TracedSettings = Omit<ModelSettings, 'stopSequences'> & { stopSequences?: string[] };

const NUMERIC_SETTINGS = [
  'temperature',
  'topP',
  'maxOutputTokens',
  'seed',
  'presencePenalty',
  'frequencyPenalty',
] as const satisfies readonly (keyof ModelSettings)[];
const REASONING_EFFORTS: ReadonlySet<unknown> = new Set(['minimal', 'low', 'medium', 'high']);

function settingsOf(value: unknown): TracedSettings | undefined {
  if (typeof value !== 'object' || value === null) return undefined;
  const given = value as Record<string, unknown>;
  const settings: TracedSettings = {};
  for (const key of NUMERIC_SETTINGS) {
    const setting = given[key];
    if (typeof setting === 'number' && Number.isFinite(setting)) settings[key] = setting;
  }
  const stops = given.stopSequences;
  if (Array.isArray(stops) && stops.every((stop) => typeof stop === 'string')) settings.stopSequences = [...stops];
  if (REASONING_EFFORTS.has(given.reasoningEffort))
    settings.reasoningEffort = given.reasoningEffort as ModelSettings['reasoningEffort'];
  return Object.keys(settings).length === 0 ? undefined : settings;
}

function serverOf(value: unknown): ModelServer | undefined {
  if (typeof value !== 'object' || value === null) return undefined;
  const { address, port } = value as { address?: unknown; port?: unknown };
  if (typeof address !== 'string' || address === '') return undefined;
  return Number.isInteger(port) && (port as number) > 0 && (port as number) < 65_536
    ? { address, port: port as number }
    : { address };
}

/**
 * The provider, server and settings of a model, each only when well formed.
 * @example
 * modelFacts(openaiModel({ model: 'gpt-4.1-mini' })); // { provider: 'openai', server: { address: 'api.openai.com', port: 443 } }
 */
export function modelFacts(model: Pick<Model, 'provider' | 'server' | 'settings'>): ModelFacts {
  let provider: unknown, server: unknown, settings: unknown;
  try {
    ({ provider, server, settings } = model as { provider?: unknown; server?: unknown; settings?: unknown });
  } catch {
    // A getter that throws says nothing about the model; the run does not depend on it.
    return {};
  }
  const facts: ModelFacts = {};
  if (typeof provider === 'string' && provider.trim() !== '') facts.provider = provider;
  const checkedServer = serverOf(server);
  if (checkedServer !== undefined) facts.server = checkedServer;
  const checkedSettings = settingsOf(settings);
  if (checkedSettings !== undefined) facts.settings = checkedSettings;
  return facts;
}

const FINISH_REASONS: ReadonlySet<string> = new Set<ModelFinishReason>([
  'stop',
  'tool_calls',
  'length',
  'content_filter',
  'error',
  'other',
]);

/** `{ modelName }` when the model gives a usable one (a string, not blank), else `{}`; never throws. */
export function modelNameOf(model: Pick<Model, 'modelName'>): { modelName?: string } {
  try {
    const { modelName } = model as { modelName?: unknown };
    return typeof modelName === 'string' && modelName.trim() !== '' ? { modelName } : {};
  } catch {
    return {};
  }
}

/**
 * A response's metadata with only the fields the contract knows, of the types it says (an adapter may add its own
 * fields, or send odd ones: metadata never decides anything, so it is cleaned, never refused). A finish reason
 * outside the contract's list becomes `other`, its own word kept as `rawFinishReason`. As `{ metadata }` to spread
 * into a record; `{}` when nothing is left.
 * @example
 * knownMetadata({ id: 7, finishReason: 'max_tokens' }) // { metadata: { finishReason: 'other', rawFinishReason: 'max_tokens' } }
 */
export function knownMetadata(metadata: unknown): { metadata?: ModelResponseMetadata } {
  if (typeof metadata !== 'object' || metadata === null) return {};
  let id: unknown, model: unknown, finishReason: unknown, rawFinishReason: unknown;
  try {
    ({ id, model, finishReason, rawFinishReason } = metadata as Record<string, unknown>);
  } catch {
    return {};
  }
  const known: ModelResponseMetadata = {};
  if (typeof id === 'string') known.id = id;
  if (typeof model === 'string') known.model = model;
  if (typeof finishReason === 'string') {
    if (FINISH_REASONS.has(finishReason)) known.finishReason = finishReason as ModelFinishReason;
    else {
      known.finishReason = 'other';
      if (typeof rawFinishReason !== 'string') known.rawFinishReason = finishReason;
    }
  }
  if (typeof rawFinishReason === 'string') known.rawFinishReason = rawFinishReason;
  return Object.keys(known).length === 0 ? {} : { metadata: known };
}
