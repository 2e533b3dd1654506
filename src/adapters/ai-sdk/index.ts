/**
 * `loopstate/ai-sdk`: models behind any AI SDK provider (Anthropic, Google, Bedrock, Mistral, Groq, an
 * OpenAI-compatible server...), from a `LanguageModelV2` or `LanguageModelV3` of `@ai-sdk/provider` 2 or 3
 * (AI SDK 5 and 6). The `ai` package is not needed.
 */
export { aiSdkModel, type AiSdkLanguageModel, type AiSdkModelOptions } from './ai-sdk-model.js';
export { AI_SDK_DEFAULTS } from '../../engine/constants.js';
