/** Redaction of one trace event before it reaches `result.trace` or a sink, walking only its free text. */
import type { Redactor } from '../redaction/redact.js';
import type { TraceEvent } from './trace-event.js';

/**
 * The event with every string redacted. The two events of every step name their free text through
 * summaries made with this loop's redactor (`summarize(value, config.redact)`), so only their other
 * strings are redacted here; walking the whole event would redact each summary a second time.
 * `runIdIsClean`: the run id holds nothing the redactor would change (else every string is walked).
 * @example
 * const event = redactedEvent(unredacted, config.redact, config.redact.text(runId) === runId);
 */
export function redactedEvent(event: TraceEvent, redact: Redactor, runIdIsClean: boolean): TraceEvent {
  if (!runIdIsClean) return redact.strings(event);
  const { text } = redact;
  switch (event.type) {
    // A transition names only the machine's own states and events: nothing to redact.
    case 'transition':
      return event;
    case 'step-start': {
      const taskId = text(event.taskId);
      return taskId === event.taskId ? event : { ...event, taskId };
    }
    case 'retry': {
      const taskId = text(event.taskId);
      // Each error is already a summary; the call's id and tool name are the model's own words.
      const argumentErrors = event.argumentErrors?.map((entry) => {
        const callId = text(entry.callId),
          name = text(entry.name);
        return callId === entry.callId && name === entry.name ? entry : { ...entry, callId, name };
      });
      const same =
        taskId === event.taskId &&
        (argumentErrors === undefined ||
          argumentErrors.every((entry, index) => entry === event.argumentErrors?.[index]));
      return same ? event : { ...event, taskId, ...(argumentErrors === undefined ? {} : { argumentErrors }) };
    }
    case 'tool-end': {
      const taskId = text(event.taskId),
        callId = text(event.callId),
        name = text(event.name);
      return taskId === event.taskId && callId === event.callId && name === event.name
        ? event
        : { ...event, taskId, callId, name };
    }
    case 'tool-health': {
      // Only names are free text here; the figures are numbers and the circuit one of three words.
      const taskId = text(event.taskId);
      const tools = event.tools.map((tool) => {
        const name = text(tool.name);
        return name === tool.name ? tool : { ...tool, name };
      });
      const offered = event.offered.map(text);
      const same =
        taskId === event.taskId &&
        tools.every((tool, index) => tool === event.tools[index]) &&
        offered.every((name, index) => name === event.offered[index]);
      return same ? event : { ...event, taskId, tools, offered };
    }
    case 'step-end': {
      const taskId = text(event.taskId),
        modelId = text(event.modelId);
      let toolCalls = event.toolCalls;
      for (const [index, call] of event.toolCalls.entries()) {
        const callId = text(call.callId),
          name = text(call.name);
        if (callId === call.callId && name === call.name) continue;
        if (toolCalls === event.toolCalls) toolCalls = [...event.toolCalls];
        toolCalls[index] = { ...call, callId, name };
      }
      // The provider's response id and model name are its own words: redacted like the model id.
      let metadata = event.metadata;
      if (metadata !== undefined) {
        const id = metadata.id === undefined ? undefined : text(metadata.id),
          model = metadata.model === undefined ? undefined : text(metadata.model),
          raw = metadata.rawFinishReason === undefined ? undefined : text(metadata.rawFinishReason);
        if (id !== metadata.id || model !== metadata.model || raw !== metadata.rawFinishReason)
          metadata = {
            ...metadata,
            ...(id === undefined ? {} : { id }),
            ...(model === undefined ? {} : { model }),
            ...(raw === undefined ? {} : { rawFinishReason: raw }),
          };
      }
      return taskId === event.taskId &&
        modelId === event.modelId &&
        toolCalls === event.toolCalls &&
        metadata === event.metadata
        ? event
        : { ...event, taskId, modelId, toolCalls, ...(metadata === undefined ? {} : { metadata }) };
    }
    // The run's own events, one each a run (a warning: a few): their free text redacted field by field, not by a
    // walk of every key. The limits are the loop's numbers (a copy of its own for this run's event), the status
    // and stop reason words of the engine's vocabulary, as a transition's names are.
    case 'run-start': {
      const { server, settings } = event;
      return {
        ...event,
        goalSummary: text(event.goalSummary),
        tasks: event.tasks.map(text),
        ...(event.name === undefined ? {} : { name: text(event.name) }),
        modelId: text(event.modelId),
        ...(event.provider === undefined ? {} : { provider: text(event.provider) }),
        ...(server === undefined ? {} : { server: redact.strings(server) }),
        ...(settings === undefined ? {} : { settings: redact.strings(settings) }),
        promptVersion: text(event.promptVersion),
      };
    }
    case 'warning': {
      const message = text(event.message);
      return message === event.message ? event : { ...event, message };
    }
    case 'run-end':
      // The usage is the machine's output, `result.usage` too: the trace gets a copy, as a walk made one.
      return { ...event, detail: text(event.detail), usage: redact.strings(event.usage) };
    case 'evaluation-end':
      return {
        ...event,
        taskId: text(event.taskId),
        reason: text(event.reason),
        evaluator: event.evaluator === null ? null : text(event.evaluator),
        ...(event.usage === undefined || event.usage === null ? {} : { usage: redact.strings(event.usage) }),
      };
    // The driver's summary of the event the machine takes, two a step: kept as it is when nothing in it is
    // redacted (the usual case), not copied. It is the very event the machine takes, so it goes only where
    // nothing changes it: the caller's `onEvent` gets a copy (`RunTrace`).
    case 'machine-event':
      return redact.sharedStrings(event);
    default:
      return redact.strings(event);
  }
}
