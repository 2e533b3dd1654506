import { describe, expect, it, vi } from 'vitest';
import { assign } from 'xstate';
import { recordModelResponse } from '../../../actions/record.js';
import incidentLoop from '../../../examples/incident.js';
import orderStatusLoop from '../../../examples/order-status.js';
import { loopMachine } from '../../../machines/loop-machine.js';
import type { AbstractOutcome } from './abstract-outcomes.js';
import type * as CompiledStep from './compiled-step.js';
import { exploreLoop, outcomesOf, type ExploredState } from './explore.js';
import { resolveForVerify } from './resolve-for-verify.js';
import { keyOptionsFor, stateKey } from './state-key.js';
import { createTransitionTracer } from './transition-catalog.js';
import { verifyModelOf } from './verify-model.js';

/** The event types the exploration's compiled step was given, counted (the real step, wrapped). */
const stepped = vi.hoisted(() => new Map<string, number>());
vi.mock('./compiled-step.js', async (original) => {
  const actual = await original<typeof CompiledStep>();
  return {
    ...actual,
    compileMachine: (...args: Parameters<typeof actual.compileMachine>) => {
      const compiled = actual.compileMachine(...args);
      if (compiled === null) return null;
      const step = compiled.step;
      compiled.step = (leaf, context, event, fired) => {
        stepped.set(event.type, (stepped.get(event.type) ?? 0) + 1);
        return step(leaf, context, event, fired);
      };
      return compiled;
    },
  };
});

const { config } = resolveForVerify(incidentLoop);
const model = verifyModelOf(config, { ...config.limits, maxSteps: 6 });

describe('memoised successors', () => {
  it('an interruption answered from the memo lands where computing it would, with the same spend', () => {
    const graph = exploreLoop(model);
    const tracer = createTransitionTracer();
    const options = keyOptionsFor(model.input.limits, true);
    let checked = 0;
    for (let edge = 0; edge < graph.edgeCount; edge += 1) {
      const source = graph.snapshotOf(graph.edgeSource[edge] as number);
      const outcome = outcomesOf(graph, source)[graph.edgeOutcome[edge] as number];
      if (
        outcome === undefined ||
        !['run.cancelRequested', 'run.faulted', 'run.deadlineReached', 'tool.withheld'].includes(outcome.event.type)
      )
        continue;
      const { next } = tracer.step(source, outcome.event);
      expect(stateKey(next, options)).toBe(graph.keys[graph.edgeTarget[edge] as number]);
      expect(next.context.usage.modelCalls - source.context.usage.modelCalls).toBe(graph.edgeModelCalls[edge]);
      expect(next.context.usage.toolCalls - source.context.usage.toolCalls).toBe(graph.edgeToolCalls[edge]);
      checked += 1;
    }
    expect(checked).toBeGreaterThan(3 * 1_000);
    expect(graph.reductions.join('\n')).toMatch(/memoised successors: [\d,]+ interruptions/);
  }, 60_000);

  it('a withheld tool is stepped once per state node, and the report counts the interruptions alone', () => {
    stepped.clear();
    const graph = exploreLoop(model);
    const edgesOf = (type: string) => {
      let edges = 0;
      for (let edge = 0; edge < graph.edgeCount; edge += 1) {
        const source = graph.states[graph.edgeSource[edge] as number] as ExploredState;
        if (outcomesOf(graph, source)[graph.edgeOutcome[edge] as number]?.event.type === type) edges += 1;
      }
      return edges;
    };
    const withheld = edgesOf('tool.withheld');
    expect(withheld).toBeGreaterThan(500);
    // One step per state node that waits for the model (a handful), not one per edge.
    expect(stepped.get('tool.withheld')).toBeGreaterThan(0);
    expect(stepped.get('tool.withheld')).toBeLessThan(20);
    const interruptions = ['run.cancelRequested', 'run.faulted', 'run.deadlineReached'];
    const memoised = interruptions.reduce((sum, type) => sum + edgesOf(type) - (stepped.get(type) ?? 0), 0);
    expect(graph.reductions.join('\n')).toContain(
      `memoised successors: ${memoised.toLocaleString('en-US')} interruptions (cancel, fault, deadline)`,
    );
  }, 60_000);

  it('a statechart given other guards is explored with no reduction and no memo', () => {
    const graph = exploreLoop(model, undefined, loopMachine.provide({}));
    expect(graph.reductions).toEqual([]);
    expect(graph.keys.length).toBeGreaterThan(exploreLoop(model).keys.length);
  }, 60_000);
});

describe('successorOf, the step a path is replayed with', () => {
  it.each(['compiled', 'xstate'] as const)(
    'through the %s stepper, lands on the state of the edge, as XState leaves it',
    (stepper) => {
      const graph = exploreLoop(model, undefined, loopMachine, stepper);
      const tracer = createTransitionTracer();
      const options = keyOptionsFor(model.input.limits, true);
      // Every 7th edge: a few thousand of every kind, from states kept as the stepper left them.
      for (let edge = 0; edge < graph.edgeCount; edge += 7) {
        const source = graph.states[graph.edgeSource[edge] as number] as ExploredState;
        const outcome = outcomesOf(graph, source)[graph.edgeOutcome[edge] as number] as AbstractOutcome;
        const next = graph.successorOf(source, outcome.event);
        expect(stateKey(next, options)).toBe(graph.keys[graph.edgeTarget[edge] as number]);
        const own = tracer.step(graph.snapshotOf(graph.edgeSource[edge] as number), outcome.event).next;
        expect([next.value, next.status, next.context, next.output]).toEqual([
          own.value,
          own.status,
          own.context,
          own.output,
        ]);
      }
    },
    60_000,
  );
});

describe('keys', () => {
  /** The loop machine with parse errors recorded as `<error><mark>x`: keyed text that holds `mark`, or not. */
  const markingParseErrors = (mark: string) =>
    loopMachine.provide({
      actions: {
        recordModelResponse: assign((args) => {
          const update = recordModelResponse(args);
          const progress = update.progress;
          if (progress === undefined || progress.lastParseError === null) return update;
          return { ...update, progress: { ...progress, lastParseError: `${progress.lastParseError}${mark}x` } };
        }),
      },
    });

  it('names states apart by their joined keys when keyed text holds the separator "|"', () => {
    const { config } = resolveForVerify(orderStatusLoop);
    const small = verifyModelOf(config, { ...config.limits, maxSteps: 4 });
    const options = keyOptionsFor(small.input.limits, false);
    const separated = exploreLoop(small, undefined, markingParseErrors('|'));
    const other = exploreLoop(small, undefined, markingParseErrors('~'));
    expect(separated.keys.some((key) => key.includes('|x|'))).toBe(true);
    // The same exploration as with a mark that is not the separator, state for state and edge for edge.
    expect(separated.keys).toEqual(other.keys.map((key) => key.replaceAll('~x', '|x')));
    expect([...separated.edgeTarget]).toEqual([...other.edgeTarget]);
    expect([...separated.parentEdge]).toEqual([...other.parentEdge]);
    expect(new Set(separated.keys).size).toBe(separated.keys.length);
    separated.keys.forEach((key, state) => expect(stateKey(separated.snapshotOf(state), options)).toBe(key));
  }, 60_000);
});
