/** The public entry point: `createLoop(config)` validates once, `loop.run(input)` runs a goal. */
import { resolveConfig, validateRunInput, type LoopConfig, type RunInput } from './config.js';
import { driveRun } from './runtime/driver.js';
import type { RunResult } from './runtime/run-result.js';
import { ToolHealth } from './tools/index.js';

/**
 * A configured loop; run it as often as you like (runs share only the tool health).
 * @example
 * const loop: Loop = createLoop({ model });
 * const { stopReason } = await loop.run({ goal: 'Summarise the incident' });
 */
export interface Loop {
  /**
   * Runs one goal to a named stop. Budget hits, denials and failures are stop reasons on the
   * result; it throws only for invalid input (`LoopConfigError`).
   */
  run(input: RunInput): Promise<RunResult>;
  /** Per-tool health shared by this loop's runs: success rate, latency, circuit breaker. */
  readonly toolHealth: ToolHealth;
}

/**
 * Creates a bounded agent loop. The config is validated before anything runs: a bad field
 * throws `LoopConfigError` naming its path.
 * @example
 * const loop = createLoop({ model: scriptedModel([reply('{"status":"shipped"}')]), evaluate: [evaluators.json()] });
 * const result = await loop.run({ goal: 'What is the status of order O-101?' });
 * console.log(result.stopReason, result.output, result.usage);
 */
export function createLoop(config: LoopConfig): Loop {
  const resolved = resolveConfig(config);
  const toolHealth = new ToolHealth({ now: () => resolved.clock.now() });
  return {
    toolHealth,
    // async, so invalid input rejects the returned promise instead of throwing synchronously.
    run: async (input) => driveRun(resolved, toolHealth, validateRunInput(input)),
  };
}
