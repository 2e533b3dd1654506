/**
 * The `openai` package (an optional peer), loaded when the first `openaiModel` is made: importing
 * `loopstate/openai` loads nothing, and a missing package is a `missing_dependency` error naming the install.
 * Loaded once, through `require`, so the client and the error classes it throws are always the same copy.
 */
import { createRequire } from 'node:module';
import type * as OpenAIPackage from 'openai';
import { loadPeer } from '../../engine/peer-dependency.js';

export type OpenAIModule = typeof OpenAIPackage;

let loaded: OpenAIModule | undefined;

export function loadOpenAI(): OpenAIModule {
  loaded ??= loadPeer(() => createRequire(import.meta.url)('openai') as OpenAIModule, {
    packageName: 'openai',
    installCommand: 'npm install openai',
    feature: 'openaiModel',
  });
  return loaded;
}
