/**
 * The loop's model, tools and clock as a durable run uses them: model responses and tool calls go
 * through the journal (served from it after an interruption), and a resumed run's clock continues
 * from the last journalled event, so time spent stopped (crashed, waiting for a person) does not
 * count against the deadline and every recorded time stays comparable.
 */
import type { Model } from '../../contracts/model.js';
import type { Clock } from '../runtime/clock.js';
import type { Tool } from '../tools/index.js';
import type { RunJournal } from './run-journal.js';

export function journalledModel(model: Model, journal: RunJournal): Model {
  const generate: Model['generate'] = (request) => journal.generate(model, request);
  // A proxy, not a copy: an adapter that is a class instance keeps its getters and methods.
  return new Proxy(model, {
    get(target, property) {
      if (property === 'generate') return generate;
      const value: unknown = Reflect.get(target, property, target);
      return typeof value === 'function' ? (value as (...args: unknown[]) => unknown).bind(target) : value;
    },
  });
}

/** The user's tools through the journal; the built-in plan tool is the run's own state and is not wrapped. */
export function journalledTools(tools: ReadonlyMap<string, Tool>, journal: RunJournal): Map<string, Tool> {
  return new Map(
    [...tools].map(([name, tool]): [string, Tool] => [
      name,
      { ...tool, execute: (args, context) => journal.execute(tool, args, context) },
    ]),
  );
}

export function continuingClock(clock: Clock, lastAt: number | null): Clock {
  if (lastAt === null) return clock;
  const offset = lastAt - clock.now();
  return {
    now: () => clock.now() + offset,
    sleep: (ms, signal) => clock.sleep(ms, signal),
    setTimer: (ms, callback) => clock.setTimer(ms, callback),
  };
}
