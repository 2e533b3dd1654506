/** `@langchain/langgraph` compiled with a MemorySaver checkpointer (one thread per run). */
import { createRunner as createLangGraphRunner } from './langgraph.mjs';

export function createRunner(options) {
  return createLangGraphRunner({ ...options, checkpointer: true });
}
