/**
 * The config `verify` explores, from what a loop file exports: a `createLoop` result (its resolved config,
 * or the config it was created with when it exposes one as `loop.config`) or a plain loop config. A plain config that createLoop would refuse only because a limit it should
 * bound is switched off (`maxSteps: Infinity`) or because its cost budget cannot see an unpriced model is
 * still explored, as written: those are exactly what verify reports, with a counterexample.
 */
import type { LoopLimits } from '../../../machines/types.js';
import { resolveConfig, resolveLimits, type ResolvedConfig } from '../../internal.js';
import { LoopConfigError } from '../../index.js';
import { loopConfigOf } from '../../internal.js';

export interface ConfigForVerify {
  config: ResolvedConfig;
  /** The limits as written, when createLoop would refuse them; undefined when they resolve as they are. */
  limits: LoopLimits | undefined;
  notes: string[];
}

/** Counts createLoop keeps finite; verify explores them switched off to show the cycle that follows. */
const COUNT_LIMITS = new Set(['maxSteps', 'maxStepsPerTask', 'maxRetries', 'maxTransportAttempts']);

/** A loop that exposes the config it was created with (`loop.config`), as given. */
function givenConfigOf(value: unknown): unknown {
  if (typeof value !== 'object' || value === null) return undefined;
  const { run, config } = value as { run?: unknown; config?: unknown };
  return typeof run === 'function' && typeof config === 'object' && config !== null ? config : undefined;
}

export function resolveForVerify(exported: unknown): ConfigForVerify {
  const resolved = loopConfigOf(exported);
  if (resolved !== undefined) return { config: resolved, limits: undefined, notes: [] };
  return resolveGiven(givenConfigOf(exported) ?? exported);
}

function resolveGiven(exported: unknown): ConfigForVerify {
  try {
    return { config: resolveConfig(exported), limits: undefined, notes: [] };
  } catch (error) {
    if (!(error instanceof LoopConfigError)) throw error;
    const limits = ((exported as { limits?: Record<string, unknown> } | null)?.limits ?? {}) as Record<string, unknown>;
    const tolerated = error.issues.every((issue) => {
      const [scope, name] = issue.path.split('.');
      if (scope !== 'limits' || name === undefined) return false;
      return (
        (COUNT_LIMITS.has(name) && limits[name] === Infinity) ||
        (name === 'maxCostUsd' && issue.message.includes('has no price'))
      );
    });
    if (!tolerated) throw error;
    const patched: Record<string, unknown> = { ...limits };
    for (const name of COUNT_LIMITS) if (patched[name] === Infinity) delete patched[name];
    if (typeof patched.maxCostUsd === 'number') patched.maxCostUsd = Infinity;
    const config = resolveConfig({ ...(exported as object), limits: patched });
    return {
      config,
      limits: resolveLimits(limits as Partial<LoopLimits>),
      notes: error.issues.map(
        (issue) => `createLoop refuses this config (${issue.path}: ${issue.message}); verify explored it as written`,
      ),
    };
  }
}
