/**
 * `loopstate/openai`: models behind the official `openai` client (an optional peer: `npm install openai`),
 * for OpenAI and any OpenAI-compatible server (Ollama, vLLM, llama.cpp) through `baseURL`.
 */
export { openaiModel, type OpenAIModelOptions } from './openai-model.js';
export { OPENAI_PRICES } from '../../engine/pricing/openai-prices.js';
export { OPENAI_DEFAULTS } from '../../engine/constants.js';
