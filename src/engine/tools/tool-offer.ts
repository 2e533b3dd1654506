/** Which tools a request offers, and in what order: the ones whose circuit is closed, ordered by weight when asked to. */
import type { ToolOrder } from '../config/config.js';
import type { ToolSpec } from '../../contracts/model.js';
import type { TraceEvent } from '../trace/trace-event.js';
import type { Tool } from './define-tool.js';
import type { ToolHealth, ToolHealthStats } from './tool-health.js';

/** Names of the tools whose circuit breaker is not open, by weight with `toolOrder: 'success_rate'`. */
export function offeredToolNames(tools: ReadonlyMap<string, Tool>, order: ToolOrder, health: ToolHealth): string[] {
  const names: string[] = [];
  for (const tool of tools.values()) if (!health.isOpen(tool.name)) names.push(tool.name);
  // A shared health object from another copy of loopstate may predate `order`: it keeps the declared order.
  return order === 'success_rate' && typeof health.order === 'function' ? health.order(names) : names;
}

/** The specs of the offered tools, in the order they are offered. */
export function offeredToolSpecs(tools: ReadonlyMap<string, Tool>, order: ToolOrder, health: ToolHealth): ToolSpec[] {
  // `map` makes the array its exact length: a model call's request holds it while the model answers, and
  // `push` onto an empty array would reserve 17 slots. A name the health's order made up has no spec.
  const specs = offeredToolNames(tools, order, health).map((name) => tools.get(name)?.spec);
  return specs.includes(undefined) ? specs.filter((spec) => spec !== undefined) : (specs as ToolSpec[]);
}

/** Every called tool's health as the `tool-health` trace event lists it. */
export function toolHealthFigures(health: ToolHealth): Extract<TraceEvent, { type: 'tool-health' }>['tools'] {
  const snapshot = health.snapshot();
  // In `Object.entries` order, without its pair per tool (this runs after every tool round); `map` makes the
  // kept array its exact length, where `push` onto an empty one would reserve 17 slots in every trace event.
  return Object.keys(snapshot).map((name) => {
    const stats = snapshot[name] as ToolHealthStats;
    return {
      name,
      calls: stats.calls,
      successes: stats.successes,
      failures: stats.failures,
      consecutiveFailures: stats.consecutiveFailures,
      successRate: stats.successRate,
      meanLatencyMs: stats.meanLatencyMs,
      weight: stats.weight ?? health.weight(name),
      circuit: stats.circuit ?? (stats.circuitOpen ? 'open' : 'closed'),
    };
  });
}
