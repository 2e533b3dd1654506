/**
 * Runs that between them make every kind of trace event: tools, transport and reflection retries,
 * argument repair, a no-progress nudge and stop, a budget stop, context trimming and learning across runs.
 */
import { evaluators, memoryStore, type LoopConfig } from 'loopstate';
import { modelError, reply, scriptedModel, toolCall, type ScriptStep } from 'loopstate/testing';
import { recordingTool } from './helpers.js';

export interface TraceScenario {
  name: string;
  script: ScriptStep[];
  config: Omit<LoopConfig, 'model'>;
}

const lookup = () => recordingTool({ respond: ({ id }) => ({ id, owner: `owner of ${String(id)}` }) }).tool;

export const TRACE_SCENARIOS: TraceScenario[] = [
  {
    name: 'tools, a 429 retried, an evaluation failure reflected',
    script: [
      toolCall('lookup', { id: 'A' }),
      modelError({ status: 429, retryAfterMs: 50 }),
      reply('not json'),
      reply('{"ok":true}'),
    ],
    config: { instructions: 'Answer as JSON.', tools: [lookup()], evaluate: [evaluators.json()] },
  },
  {
    name: 'invalid arguments repaired',
    script: [toolCall('lookup', { wrong: 1 }), toolCall('lookup', { id: 'B' }), reply('done')],
    config: { tools: [lookup()] },
  },
  {
    name: 'the same call with the same result: nudged, then stopped',
    script: Array.from({ length: 6 }, () => toolCall('lookup', { id: 'A' })),
    config: { tools: [lookup()], noProgress: { repeatedToolCall: 2 } },
  },
  {
    name: 'output tokens run out',
    script: Array.from({ length: 5 }, (_, index) =>
      toolCall('lookup', { id: `C${index}` }, { usage: { inputTokens: 50, outputTokens: 30 } }),
    ),
    config: { tools: [lookup()], limits: { maxOutputTokens: 70 } },
  },
  {
    name: 'context trimmed to fit a per-call ceiling',
    script: [...Array.from({ length: 10 }, (_, index) => toolCall('big', { id: `R-${index}` })), reply('checked')],
    config: {
      instructions: 'Check every record.',
      tools: [recordingTool({ name: 'big', respond: ({ id }) => ({ id, body: `${String(id)} `.repeat(400) }) }).tool],
      context: { maxInputTokensPerCall: 1_500 },
      limits: { maxSteps: 20 },
    },
  },
  {
    name: 'learning across runs: the learning a run starts from and the batches it writes',
    script: [toolCall('lookup', { id: 'L' }), reply('done')],
    config: { tools: [lookup()], store: memoryStore(), learning: { batchWindow: { outcomes: 1 } } },
  },
];

/** A fresh scripted model for a scenario (a script is used up by one run). */
export function scenarioModel(scenario: TraceScenario) {
  return scriptedModel(scenario.script);
}
