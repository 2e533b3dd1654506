/**
 * The mutable, driver-side state of one run: transcript, trace, warnings, progress facts.
 * The machine holds only constant-size counters; everything that grows lives here, appended
 * to in place so a step costs the same at step 3 and at step 300.
 */
import type { ResolvedConfig, TaskConfig } from '../config/config.js';
import type { LastEvaluation } from '../output/final-output.js';
import type { PriorConversation } from '../conversation/prior-conversation.js';
import type { ToolSpec } from '../../contracts/model.js';
import { RunPlan } from '../plan/plan-tool.js';
import { ProgressTracker } from '../progress/index.js';
import { thrownMessage } from '../redaction/describe-thrown.js';
import type { PreparedCall, Tool, ToolHealth } from '../tools/index.js';
import type { TraceEvent } from '../trace/trace-event.js';
import { PromptRecorder } from '../trace/prompt-snapshots.js';
import { openTraceSinks, type TraceSink } from '../trace/trace-sinks.js';
import { AbortFanout } from './abort-fanout.js';
import { priceOf } from '../pricing/pricing.js';
import { Transcript } from './transcript.js';

/** A call of the last model decision, waiting to be run or answered. */
export interface PendingCall {
  call: PreparedCall;
  fingerprint: string;
  /** What a valid call is answered with instead of being run, and why; null when it may run. */
  refusal: { reason: RefusalReason; message: string } | null;
}

/** Why a call the policy allows is answered instead of run. */
export type RefusalReason = 'duplicate in the reply' | 'maxToolCalls spent' | 'over maxToolCallsPerReply' | 'rejected by a person';

/** The sink live events go to: the caller's `onEvent`. */
const LIVE_SINK = 'trace.onEvent';

export class RunSession {
  /** Replaced only when a durable run is restored. */
  progress = new ProgressTracker();
  readonly trace: TraceEvent[] = [];
  readonly warnings: string[] = [];
  /** By task id, without a prototype: a task id never reads or shadows what objects inherit. */
  readonly taskOutputs: Record<string, unknown> = Object.create(null) as Record<string, unknown>;
  readonly tasks: readonly TaskConfig[];
  /** The loop's tools plus the built-in plan tool when it is on. */
  readonly tools: ReadonlyMap<string, Tool>;
  readonly plan: RunPlan | null;
  transcript: Transcript;
  taskIndex = -1;
  pendingCalls: PendingCall[] = [];
  /** The current task's last model reply: what it is evaluated on, and the best partial output when it does not complete. */
  lastReply: string | null = null;
  fatalError: Error | null = null;
  /** The state the actor rests in, as the trace names it: the `from` of the next transition, named once. */
  restingState: string | null = null;
  /** The last evaluation's reply and format-layer parse: a run that stops early reports it as its output. */
  lastEvaluation: LastEvaluation | null = null;
  private readonly toolSpecChars: number;
  /** The next task's conversation, built ahead so its first request can be estimated before the budget gate. */
  private preparedTask: { index: number; transcript: Transcript } | null = null;
  /** Model ids already warned about as unpriced (persisted with a durable run). */
  readonly unpricedModels = new Set<string>();
  /** True while a durable run is rebuilt from its journal: its trace events were delivered once already. */
  replaying = false;
  /** The run's one listener on its signal: effects wait on the abort through this, not a listener each. */
  readonly aborts: AbortFanout;
  /** Where events go besides `result.trace`; a sink that fails is removed from this list. */
  private readonly sinks: TraceSink[];
  /** Sinks that could not be opened, said as warnings once the run has started. */
  readonly traceProblems: readonly string[];
  /** Follows the model requests when `trace.prompts` is on. */
  readonly prompts: PromptRecorder | null;

  constructor(
    readonly config: ResolvedConfig,
    readonly runId: string,
    readonly goal: string,
    readonly signal: AbortSignal,
    /** A prior conversation from `run({ messages })`: the start of the first task's conversation. */
    readonly conversation: PriorConversation = { goal, messages: [], goalGiven: true, warnings: [] },
  ) {
    this.aborts = new AbortFanout(signal);
    this.tasks = config.tasks ?? [{ id: 'main', prompt: goal }];
    this.runIdIsClean = config.redact.text(runId) === runId;
    this.plan = config.plan ? new RunPlan() : null;
    this.tools = this.plan === null ? config.tools : new Map([...config.tools, [this.plan.tool.name, this.plan.tool]]);
    this.toolSpecChars = [...this.tools.values()].reduce((sum, tool) => sum + JSON.stringify(tool.spec).length, 0);
    this.transcript = new Transcript(this.toolSpecChars);
    const { sinks, problems } = openTraceSinks(config.trace);
    this.sinks = sinks;
    this.traceProblems = problems;
    this.prompts = config.trace.prompts ? new PromptRecorder() : null;
  }

  get task(): TaskConfig {
    const task = this.tasks[this.taskIndex];
    if (!task) throw new Error(`no task at index ${this.taskIndex}`);
    return task;
  }

  /** Start a fresh conversation for the task at `index`: each task is its own bounded loop. */
  beginTask(index: number): void {
    const prepared = this.preparedTask?.index === index ? this.preparedTask.transcript : null;
    this.preparedTask = null;
    this.transcript = prepared ?? this.buildTranscript(index);
    this.taskIndex = index;
    this.pendingCalls = [];
    this.lastReply = null;
    this.progress.beginTask();
    this.plan?.reset();
  }

  /** Builds the conversation of the task at `index` ahead of time; returns its first request's token estimate. */
  prepareTask(index: number): number {
    const transcript = this.buildTranscript(index);
    this.preparedTask = { index, transcript };
    return this.estimateNextRequest(0, transcript);
  }

  /**
   * Estimated input tokens of the next request, `extraChars` of feedback included. A request over the
   * per-call context ceiling is cut down to it before it is sent (or not sent at all), so the budget
   * gate checks what can actually go out.
   */
  estimateNextRequest(extraChars = 0, transcript: Transcript = this.transcript): number {
    return Math.min(transcript.estimateTokens(extraChars), this.config.context.maxInputTokensPerCall);
  }

  private buildTranscript(index: number): Transcript {
    const transcript = new Transcript(this.toolSpecChars);
    if (this.config.instructions) transcript.append({ role: 'system', content: this.config.instructions });
    if (index === 0) for (const message of this.conversation.messages) transcript.append(message);
    // Continuing a conversation without a new goal: its last user message is the task.
    if (index > 0 || this.conversation.goalGiven || this.config.tasks !== null) transcript.append({ role: 'user', content: this.taskPrompt(index) });
    transcript.taskMessage = transcript.messages.findLast((message) => message.role === 'user') ?? null;
    return transcript;
  }

  private taskPrompt(index: number): string {
    const task = this.tasks[index];
    if (!task) throw new Error(`no task at index ${index}`);
    const prompt = typeof task.prompt === 'function' ? task.prompt({ goal: this.goal, outputs: this.taskOutputs }) : task.prompt;
    if (this.config.tasks === null) return prompt;
    const done = Object.keys(this.taskOutputs).length > 0 ? `\n\nResults of earlier tasks:\n${JSON.stringify(this.taskOutputs)}` : '';
    return `Goal: ${this.goal}${done}\n\nCurrent task (${task.id}): ${prompt}`;
  }

  /** Tools offered to the model: those whose circuit breaker is not open, by weight with `toolOrder: 'success_rate'`. */
  offeredTools(health: ToolHealth): ToolSpec[] {
    const specs: ToolSpec[] = [];
    for (const name of this.offeredToolNames(health)) {
      const tool = this.tools.get(name);
      if (tool !== undefined) specs.push(tool.spec);
    }
    return specs;
  }

  private offeredToolNames(health: ToolHealth): string[] {
    const names: string[] = [];
    for (const tool of this.tools.values()) if (!health.isOpen(tool.name)) names.push(tool.name);
    // A shared health object from another copy of loopstate may predate `order`: it keeps the declared order.
    return this.config.toolOrder === 'success_rate' && typeof health.order === 'function' ? health.order(names) : names;
  }

  /** After a tool round: every called tool's health and the order the next request offers the tools in. */
  recordToolHealth(health: ToolHealth, step: number, at: number): void {
    const tools = Object.entries(health.snapshot()).map(([name, stats]) => ({
      name, calls: stats.calls, successes: stats.successes, failures: stats.failures, consecutiveFailures: stats.consecutiveFailures,
      successRate: stats.successRate, meanLatencyMs: stats.meanLatencyMs, weight: stats.weight ?? health.weight(name),
      circuit: stats.circuit ?? (stats.circuitOpen ? 'open' : 'closed'),
    }));
    this.record({ type: 'tool-health', runId: this.runId, at, taskId: this.task.id, step, tools, offered: this.offeredToolNames(health) });
  }

  /** The run id holds nothing the redaction rules would change. */
  private readonly runIdIsClean: boolean;

  /** Every event is redacted here, the one door to `result.trace` and every sink. */
  record(unredacted: TraceEvent): void {
    this.emit(unredacted, false);
  }

  /** `live`: a streamed delta, for `onEvent` only (never kept on `result.trace`, in the file or in spans). */
  private emit(unredacted: TraceEvent, live: boolean): void {
    const { sinks } = this;
    const keep = this.config.trace.inMemory && !live;
    if (!keep && sinks.length === 0) return;
    const event = this.redacted(unredacted);
    if (keep) this.trace.push(event);
    // A durable run being rebuilt delivered these events to its sinks the first time.
    if (this.replaying) return;
    for (let index = 0; index < sinks.length; index++) {
      const sink = sinks[index];
      if (sink === undefined || (live && sink.option !== LIVE_SINK)) continue;
      try {
        sink.write(event);
      } catch (error) {
        // A broken trace sink must not stop the loop; it is dropped once, with a warning.
        sinks.splice(index--, 1);
        this.closeSink(sink);
        this.warn(`${sink.option} ${sink.option === 'trace.onEvent' ? 'threw' : 'failed'} and was disabled for this run: ${thrownMessage(error)}`, event.at);
      }
    }
  }

  /** Closes every sink (the trace file's descriptor, open spans); safe to call twice. */
  closeTrace(): void {
    for (const sink of this.sinks.splice(0)) this.closeSink(sink);
  }

  private closeSink(sink: TraceSink): void {
    try {
      sink.close?.();
    } catch (error) {
      this.warnings.push(this.config.redact.text(`${sink.option} could not be closed: ${thrownMessage(error)}`));
    }
  }

  /**
   * The event with every string redacted. The two events of every step name their free text through
   * summaries made with this loop's redactor (`summarize(value, config.redact)`), so only their other
   * strings are redacted here; walking the whole event would redact each summary a second time.
   */
  private redacted(event: TraceEvent): TraceEvent {
    if (!this.runIdIsClean) return this.config.redact.strings(event);
    const { text } = this.config.redact;
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
          const callId = text(entry.callId), name = text(entry.name);
          return callId === entry.callId && name === entry.name ? entry : { ...entry, callId, name };
        });
        const same = taskId === event.taskId && (argumentErrors === undefined || argumentErrors.every((entry, index) => entry === event.argumentErrors?.[index]));
        return same ? event : { ...event, taskId, ...(argumentErrors === undefined ? {} : { argumentErrors }) };
      }
      case 'tool-end': {
        const taskId = text(event.taskId), callId = text(event.callId), name = text(event.name);
        return taskId === event.taskId && callId === event.callId && name === event.name ? event : { ...event, taskId, callId, name };
      }
      case 'tool-health': {
        // Only names are free text here; the figures are numbers and the circuit one of three words.
        const taskId = text(event.taskId);
        const tools = event.tools.map((tool) => {
          const name = text(tool.name);
          return name === tool.name ? tool : { ...tool, name };
        });
        const offered = event.offered.map(text);
        const same = taskId === event.taskId && tools.every((tool, index) => tool === event.tools[index]) && offered.every((name, index) => name === event.offered[index]);
        return same ? event : { ...event, taskId, tools, offered };
      }
      case 'step-end': {
        const taskId = text(event.taskId), modelId = text(event.modelId);
        let toolCalls = event.toolCalls;
        for (const [index, call] of event.toolCalls.entries()) {
          const callId = text(call.callId), name = text(call.name);
          if (callId === call.callId && name === call.name) continue;
          if (toolCalls === event.toolCalls) toolCalls = [...event.toolCalls];
          toolCalls[index] = { ...call, callId, name };
        }
        return taskId === event.taskId && modelId === event.modelId && toolCalls === event.toolCalls ? event : { ...event, taskId, modelId, toolCalls };
      }
      default:
        return this.config.redact.strings(event);
    }
  }

  /** True when live events have somewhere to go: a streaming model's progress is then worth reporting. */
  get wantsLiveEvents(): boolean {
    return this.sinks.some((sink) => sink.option === LIVE_SINK);
  }

  /** A live event (a streamed delta): redacted and handed to `onEvent`, never kept on `result.trace`. */
  recordLive(unredacted: TraceEvent): void {
    if (this.wantsLiveEvents) this.emit(unredacted, true);
  }

  /** Warns once per model id that has no price: its spend is invisible to maxCostUsd. */
  warnIfUnpriced(modelId: string, at: number): void {
    if (priceOf(this.config.prices, modelId) !== undefined || this.unpricedModels.has(modelId)) return;
    this.unpricedModels.add(modelId);
    this.warn(`no price for model "${modelId}": its cost counts as $0, so maxCostUsd cannot stop it; add it to \`prices\``, at);
  }

  warn(unredacted: string, at: number): void {
    const message = this.config.redact.text(unredacted);
    this.warnings.push(message);
    this.record({ type: 'warning', runId: this.runId, at, message });
  }
}
