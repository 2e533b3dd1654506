/** The public entry point: `createLoop(config)` validates once, `loop.run(input)` runs a goal. */
import { resolveConfig, validateRunInput, type LoopConfig, type RunInput } from './config.js';
import { driveRun } from './runtime/driver.js';
import type { RunResult } from './runtime/run-result.js';
import type { ToolHealth } from './tools/index.js';

/**
 * A configured loop; run it as often as you like. Runs share nothing unless a `toolHealth` was passed to
 * `createLoop`: then they share its circuit breakers.
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
  /**
   * The tool health passed to `createLoop` and shared by this loop's runs (success rate, latency, circuit
   * breaker); undefined when none was passed, since each run then keeps its own.
   */
  readonly toolHealth: ToolHealth | undefined;
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
  return {
    toolHealth: resolved.toolHealth,
    // async, so invalid input rejects the returned promise instead of throwing synchronously.
    run: async (input) => driveRun(resolved, resolved.toolHealth, validateRunInput(input)),
  };
}
