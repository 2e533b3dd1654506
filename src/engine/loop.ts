/** The public entry point: `createLoop(config)` validates once, `loop.run(input)` runs a goal. */
import {
  refreshTools,
  resolveConfig,
  validateRunInput,
  type LoopConfig,
  type ResolvedConfig,
  type RunInput,
  type TaskConfig,
} from './config/config.js';
import type { EvaluateOption, LoopOutput } from './evaluators/index.js';
import { DurableRuns, type ResumeOptions } from './durable/durable-runs.js';
import { LoopstateError } from '../contracts/errors.js';
import { driveRun } from './runtime/driver.js';
import type { RunResult } from './runtime/run-result.js';
import type { ToolHealth } from './tools/index.js';

/**
 * Where a loop keeps its resolved config, for tools that analyse a loop without running it
 * (`loopstate verify`). A registered symbol, so a loop built by another copy of the package (a loop
 * file loaded through a TypeScript loader) is still recognised.
 */
export const LOOP_CONFIG: unique symbol = Symbol.for('loopstate.loop-config') as never;

/**
 * The resolved config of a `createLoop` result, or undefined for anything else.
 * @example
 * const config = loopConfigOf(loop); // config?.limits.maxSteps
 */
export function loopConfigOf(value: unknown): ResolvedConfig | undefined {
  if (typeof value !== 'object' || value === null) return undefined;
  const config = (value as Record<symbol, unknown>)[LOOP_CONFIG];
  return typeof config === 'object' && config !== null ? (config as ResolvedConfig) : undefined;
}

/** Where a loop with a store keeps its durable runs, for a workflow engine that drives them (the DBOS worker). */
export const DURABLE_RUNS: unique symbol = Symbol.for('loopstate.durable-runs') as never;

/** The durable runs of a `createLoop({ store })` result, or undefined for anything else. */
export function durableRunsOf(value: unknown): DurableRuns | undefined {
  if (typeof value !== 'object' || value === null) return undefined;
  const runs = (value as Record<symbol, unknown>)[DURABLE_RUNS];
  return runs instanceof DurableRuns ? runs : undefined;
}

/**
 * A configured loop; run it as often as you like. Runs share nothing unless a `toolHealth` was passed to
 * `createLoop`: then they share its circuit breakers. `Output` is the type of `result.output`, inferred
 * from the config's evaluators.
 * @example
 * const loop: Loop = createLoop({ model });
 * const { stopReason } = await loop.run({ goal: 'Summarise the incident' });
 */
export interface Loop<Output = unknown> {
  /** The loop's name (`name` in the config, default `loopstate`): OpenTelemetry's `gen_ai.agent.name`. */
  readonly name: string;
  /**
   * Runs one goal to a named stop. Budget hits, denials and failures are stop reasons on the
   * result; it throws only for invalid input (`LoopConfigError`).
   */
  run(input: RunInput): Promise<RunResult<Output>>;
  /**
   * The tool health passed to `createLoop` and shared by this loop's runs (success rate, latency, circuit
   * breaker); undefined when none was passed, since each run then keeps its own.
   */
  readonly toolHealth: ToolHealth | undefined;
  /**
   * The config this loop was created with, as given (frozen at the top level): tools such as the CLI
   * rebuild the loop from it with another model or trace sink.
   */
  readonly config: Readonly<LoopConfig>;
  /**
   * Continues a run of this loop's `store` where it stopped: after a crash (in any process), or after a
   * stop for approval with the person's `approvals`. A finished run returns its recorded result, and
   * approvals the run took already, sent again, return its result as it stands. The run keeps the
   * limits it was started with (a warning names those this loop sets otherwise).
   * Throws `ApprovalError` for approvals that do not fit and `RunAccessError` for a run that is
   * unknown or held by another process; needs a `store`.
   */
  resume(runId: string, options?: ResumeOptions): Promise<RunResult<Output>>;
  /**
   * Cancels a run of this loop's `store`: a run this loop object drives stops at once; one no process
   * holds is recorded as `cancelled` and its result returned; one another process (or loop object) drives
   * stops at its next commit: before its next step, or within `durable.maxUncommittedMs` for steps grouped
   * into one commit (null). A cancel that throws records nothing. Needs a `store`.
   */
  cancel(runId: string): Promise<RunResult<Output> | null>;
}

/**
 * Creates a bounded agent loop. The config is validated before anything runs: a bad field
 * throws `LoopConfigError` naming its path. With an `evaluators.schema(S)` among the evaluators
 * (of the last task, in a workflow), `result.output` is typed as `z.output<typeof S> | null`.
 * @example
 * const loop = createLoop({ model: scriptedModel([reply('{"status":"shipped"}')]), evaluate: evaluators.schema(z.object({ status: z.string() })) });
 * const result = await loop.run({ goal: 'What is the status of order O-101?' });
 * console.log(result.stopReason, result.output?.status, result.usage);
 */
// No defaults: a type parameter left uninferred falls back to its constraint, which still types a
// task's prompt function while the tasks are being inferred (a default would be fixed too early).
export function createLoop<const Evaluate extends EvaluateOption, const Tasks extends readonly TaskConfig[]>(
  config: LoopConfig<Evaluate, Tasks>,
): Loop<LoopOutput<Evaluate, Tasks>> {
  const resolved = resolveConfig(config);
  const durable = resolved.store === undefined ? null : new DurableRuns(resolved, resolved.store);
  const needsStore = (method: string) =>
    new LoopstateError({
      code: 'no_store',
      message: `loop.${method} needs a store: createLoop({ ..., store: sqliteStore({ path }) })`,
    });
  type Result = RunResult<LoopOutput<Evaluate, Tasks>>;
  const loop: Loop<LoopOutput<Evaluate, Tasks>> = {
    name: resolved.name,
    toolHealth: resolved.toolHealth,
    config: Object.freeze({ ...config }) as Readonly<LoopConfig>,
    // Invalid input rejects the returned promise instead of throwing synchronously. Not an async function: the
    // run's own promise is returned, so a run in flight holds no second async frame waiting on it.
    // The cast is the one place the output type meets run time: only a value that passed these evaluators is output.
    run: (input) => {
      try {
        refreshTools(resolved, config);
        const checked = validateRunInput(input);
        return (
          durable === null ? driveRun(resolved, resolved.toolHealth, checked) : durable.run(checked)
        ) as Promise<Result>;
      } catch (error) {
        return Promise.reject(error as Error);
      }
    },
    resume: async (runId, options) => {
      if (durable === null) throw needsStore('resume');
      refreshTools(resolved, config);
      return (await durable.resume(runId, options)) as Result;
    },
    cancel: async (runId) => {
      if (durable === null) throw needsStore('cancel');
      return (await durable.cancel(runId)) as Result | null;
    },
  };
  // Non-enumerable: the loop's shape (and a JSON of it) stays what it was.
  Object.defineProperty(loop, LOOP_CONFIG, { value: resolved, enumerable: false });
  if (durable !== null) Object.defineProperty(loop, DURABLE_RUNS, { value: durable, enumerable: false });
  return loop;
}
