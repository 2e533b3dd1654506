/**
 * The naming rules of docs/contributing/naming.md, checked on the names themselves: every machine event,
 * trace event type, guard and action. A list below that must name every member of its union is typed
 * `Record<Union, true>`, so the type-check fails when a member is added without being listed here.
 */
import { describe, expect, it } from 'vitest';
import { loopMachine, type LoopEvent, type TraceEventType } from 'loopstate';

const MACHINE_EVENT_TYPES: Record<LoopEvent['type'], true> = {
  'run.started': true,
  'model.responded': true,
  'model.failed': true,
  'tools.completed': true,
  'evaluation.completed': true,
  'backoff.elapsed': true,
  'run.deadlineReached': true,
  'tool.withheld': true,
  'run.faulted': true,
  'run.cancelRequested': true,
};

const TRACE_EVENT_TYPES: Record<TraceEventType, true> = {
  'run-start': true,
  'step-start': true,
  'step-end': true,
  prompt: true,
  'tool-end': true,
  'tool-health': true,
  'evaluation-end': true,
  retry: true,
  'no-progress': true,
  transition: true,
  'machine-event': true,
  'model-error': true,
  'model-delta': true,
  'model-tool-call-start': true,
  'context-trimmed': true,
  warning: true,
  'approval-decided': true,
  'review-requested': true,
  'review-decided': true,
  'run-resume': true,
  'run-end': true,
};

/** Past participles that do not end in -ed. */
const IRREGULAR_PAST = new Set(['withheld', 'sent', 'made', 'begun', 'lost', 'found', 'run', 'done']);
/** The verbs a trace event type may end with; anything else is read as part of the noun. */
const TRACE_VERBS = new Set(['start', 'end', 'resume', 'trimmed', 'decided', 'requested']);
/** Words a trace type must not use as its noun: they are verbs, so the event would read verb first. */
const VERB_WORDS = new Set([
  ...TRACE_VERBS,
  'started',
  'ended',
  'resumed',
  'trim',
  'decide',
  'request',
  'begin',
  'finish',
  'finished',
  'stop',
  'stopped',
]);
/** Verbs an action's name may begin with. */
const ACTION_VERBS = ['start', 'record', 'schedule', 'request', 'nudge', 'stop', 'fail', 'complete', 'skip'];
/** Guards named before the rule was written down; renamed with the next regeneration of the statechart layout. */
const GUARD_NAME_EXCEPTIONS = new Set(['wasNudgedEarlier']);

const lastCamelWord = (name: string) => /[A-Z]?[a-z]+$/.exec(name)?.[0].toLowerCase() ?? '';

/** `<source>.<pastTenseVerb>`: a lowercase source, then camelCase ending in a past participle. */
function machineEventProblem(type: string): string | null {
  const match = /^([a-z]+)\.([a-z]+(?:[A-Z][a-z]+)*)$/.exec(type);
  if (match === null) return 'not <source>.<camelCaseVerb>';
  const verb = lastCamelWord(match[2] ?? '');
  return verb.endsWith('ed') || IRREGULAR_PAST.has(verb) ? null : `"${verb}" is not a past-tense verb`;
}

/** `<noun>[-<noun>…][-<verb>]`, kebab-case, with a known verb only as the last word. */
function traceEventProblem(type: string): string | null {
  if (!/^[a-z]+(-[a-z]+)*$/.test(type)) return 'not kebab-case';
  const words = type.split('-');
  const last = words.length > 1 ? (words.at(-1) ?? '') : '';
  const nouns = TRACE_VERBS.has(last) ? words.slice(0, -1) : words;
  const verbAsNoun = nouns.find((word) => VERB_WORDS.has(word));
  return verbAsNoun === undefined
    ? null
    : `"${verbAsNoun}" is a verb where a noun belongs (the verb comes last, one of ${[...TRACE_VERBS].join(', ')})`;
}

/** Every event a transition of the machine names. */
function handledEvents(): Set<string> {
  return new Set(loopMachine.root.events.filter((type) => !type.startsWith('xstate.')));
}

describe('naming rules', () => {
  it('machine events are <source>.<pastTenseVerb>', () => {
    const problems = Object.keys(MACHINE_EVENT_TYPES)
      .map((type) => [type, machineEventProblem(type)])
      .filter(([, problem]) => problem !== null);
    expect(problems).toEqual([]);
  });

  it('the machine handles exactly the events of the LoopEvent union', () => {
    expect([...handledEvents()].sort()).toEqual(Object.keys(MACHINE_EVENT_TYPES).sort());
  });

  it('trace event types are a kebab-case noun, then a known verb when there is one', () => {
    const problems = Object.keys(TRACE_EVENT_TYPES)
      .map((type) => [type, traceEventProblem(type)])
      .filter(([, problem]) => problem !== null);
    expect(problems).toEqual([]);
  });

  it('guards are is*, has* or can* questions', () => {
    const guards = Object.keys(loopMachine.implementations.guards);
    expect(guards.length).toBeGreaterThan(10);
    expect(guards.filter((name) => !/^(is|has|can)[A-Z]/.test(name) && !GUARD_NAME_EXCEPTIONS.has(name))).toEqual([]);
    // An exception that was renamed is taken off the list.
    for (const name of GUARD_NAME_EXCEPTIONS) expect(guards).toContain(name);
  });

  it('actions begin with a verb', () => {
    const actions = Object.keys(loopMachine.implementations.actions);
    expect(actions.length).toBeGreaterThan(10);
    expect(
      actions.filter(
        (name) =>
          !ACTION_VERBS.some(
            (verb) => name === verb || (name.startsWith(verb) && /^[A-Z]/.test(name.slice(verb.length))),
          ),
      ),
    ).toEqual([]);
  });

  it('the checks refuse names that break the rules', () => {
    expect(machineEventProblem('run.start')).not.toBeNull();
    expect(machineEventProblem('modelResponded')).not.toBeNull();
    expect(machineEventProblem('run.cancelRequest')).not.toBeNull();
    expect(traceEventProblem('stepEnd')).not.toBeNull();
    expect(traceEventProblem('started-run')).not.toBeNull();
    expect(traceEventProblem('end-step')).not.toBeNull();
    expect(traceEventProblem('step-end')).toBeNull();
  });
});
