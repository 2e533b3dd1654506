/**
 * The mutable, driver-side state of one run: transcript, trace, warnings, progress facts.
 * The machine holds only constant-size counters; everything that grows lives here, appended
 * to in place so a step costs the same at step 3 and at step 300.
 */
import { modelFacts, modelNameOf } from '../trace/model-facts.js';
import type { ResolvedConfig, TaskConfig } from '../config/config.js';
import type { LastEvaluation, ReviewRequest } from '../output/final-output.js';
import type { PendingReview } from './run-result.js';
import type { PriorConversation } from '../conversation/prior-conversation.js';
import type { ToolSpec } from '../../contracts/model.js';
import { RunPlan } from '../plan/plan-tool.js';
import { ProgressTracker } from '../progress/index.js';
import type { PreparedCall, Tool, ToolHealth } from '../tools/index.js';
import type { TraceEvent } from '../trace/trace-event.js';
import { PromptRecorder } from '../trace/prompt-snapshots.js';
import type { TaskFeedback } from '../learning/learning-math.js';
import { RunTrace, type EarlierTrace, type KeptEvents } from '../trace/run-trace.js';
import { offeredToolNames, offeredToolSpecs, toolHealthFigures } from '../tools/tool-offer.js';
import { AbortFanout, RunAbort } from './abort-fanout.js';
import { priceOf } from '../pricing/pricing.js';
import { Transcript } from './transcript.js';
import { reusableTimer, type ReusableTimer } from './clock.js';
import { unguarded } from '../hooks/guarded-clock.js';
import { taskTranscript } from '../conversation/task-transcript.js';
import { toolSpecChars, type LoopSetup } from './loop-setup.js';

/** A call of the last model decision, waiting to be run or answered. */
export interface PendingCall {
  call: PreparedCall;
  fingerprint: string;
  /** What a valid call is answered with instead of being run, and why; null when it may run. */
  refusal: { reason: RefusalReason; message: string } | null;
}

/** Why a call the policy allows is answered instead of run. */
export type RefusalReason =
  'duplicate in the reply' | 'maxToolCalls spent' | 'over maxToolCallsPerReply' | 'rejected by a person';

/**
 * What a durable run's journal puts back into a session: the small fields whole, and the progress
 * tracker, task outputs and unpriced model ids when the record carries them (null: unchanged).
 */
export interface RestoredSessionFields {
  taskIndex: number;
  pendingCalls: PendingCall[];
  lastReply: string | null;
  lastEvaluation: LastEvaluation | null;
  fatalError: Error | null;
  restingState: string | null;
  taskOutputs: Record<string, unknown> | null;
  progress: ProgressTracker | null;
  unpricedModels: readonly string[];
}

/**
 * One run's state outside the machine. Everything that changes is private and changes through a
 * method named for what happened (`holdCalls`, `noteReply`, `recordEvaluation`, `recordFatalError`,
 * ...), so each write has one place to look; the effects read it through getters.
 */
export class RunSession {
  #progress = new ProgressTracker();
  readonly #trace: RunTrace;
  readonly #warnings: string[] = [];
  /** By task id, without a prototype: a task id never reads or shadows what objects inherit. */
  readonly #taskOutputs: Record<string, unknown> = Object.create(null) as Record<string, unknown>;
  #transcript: Transcript;
  #taskIndex = -1;
  #pendingCalls: readonly PendingCall[] = [];
  #lastReply: string | null = null;
  #fatalError: Error | null = null;
  #restingState: string | null = null;
  #lastEvaluation: LastEvaluation | null = null;
  /** The run's one timer for its calls' timeouts on the system clock (null: a timer a call); made at the first call. */
  #callTimer: ReusableTimer | null | undefined = undefined;
  /** Model ids already warned about as unpriced (persisted with a durable run); made at the first. */
  #unpricedModels: Set<string> | undefined = undefined;
  readonly tasks: readonly TaskConfig[];
  /** The loop's tools plus the built-in plan tool when it is on. */
  readonly tools: ReadonlyMap<string, Tool>;
  readonly plan: RunPlan | null;
  private readonly toolSpecChars: number;
  /** The next task's conversation, built ahead so its first request can be estimated before the budget gate. */
  private preparedTask: { index: number; transcript: Transcript } | null = null;
  /**
   * The run's abort: effects wait on it and ask `aborts.aborted` through this, not a listener each. A run's own
   * `RunAbort` makes its signal only when something reads `signal`; a given signal gets one listener.
   */
  readonly aborts: AbortFanout | RunAbort;
  /** With learning: each task's feedback from earlier runs, for its prompt function (set before the first task begins). */
  taskFeedback: ((taskId: string) => TaskFeedback) | null = null;
  /** With learning: told a person's review verdict when it is applied (accepted = a pass, rejected = a failure with the person's reason). */
  noteReviewVerdict: ((taskId: string, accepted: boolean, reason: string) => void) | null = null;
  /** Follows the model requests when `trace.prompts` is on. */
  readonly prompts: PromptRecorder | null;

  constructor(
    readonly config: ResolvedConfig,
    readonly runId: string,
    readonly goal: string,
    /** Aborted on cancel or the deadline: a signal, or the run's own abort (its signal made on first read). */
    abort: AbortSignal | RunAbort,
    /** A prior conversation from `run({ messages })`: the start of the first task's conversation. */
    readonly conversation: PriorConversation = { goal, messages: [], goalGiven: true, warnings: [] },
    /** The loop's run-independent facts, worked out once for all its runs; without it, this run works them out. */
    setup?: LoopSetup,
  ) {
    this.aborts = abort instanceof RunAbort ? abort : new AbortFanout(abort);
    this.tasks = config.tasks ?? [{ id: 'main', prompt: goal }];
    this.plan = config.plan ? new RunPlan() : null;
    this.tools = this.plan === null ? config.tools : new Map([...config.tools, [this.plan.tool.name, this.plan.tool]]);
    this.toolSpecChars = setup === undefined ? toolSpecChars(this.tools) : setup.toolFacts(this.tools).specChars;
    this.#transcript = new Transcript(this.toolSpecChars);
    this.#trace = new RunTrace(
      config.trace,
      config.redact,
      config.redact.text(runId) === runId,
      {
        sinkDropped: (message, at) => this.warn(message, at),
        closeFailed: (message) => this.#warnings.push(config.redact.text(message)),
      },
      // Redacted like every event: spans and metrics carry these strings too. Worked out only for a run that
      // opens an OpenTelemetry sink: most runs have none, and the model's facts are read again for `run-start`.
      () =>
        config.redact.strings({
          agentName: config.name,
          modelId: config.model.id,
          ...modelNameOf(config.model),
          ...modelFacts(config.model),
        }),
    );
    this.prompts = config.trace.prompts ? new PromptRecorder() : null;
  }

  /** The run's abort signal, made on first read for a run's own `RunAbort`: ask `aborts.aborted` to only check it. */
  get signal(): AbortSignal {
    return this.aborts.signal;
  }

  get task(): TaskConfig {
    const task = this.tasks[this.#taskIndex];
    if (!task) throw new Error(`no task at index ${this.#taskIndex}`);
    return task;
  }

  /** Signals, counts and digests of the current task (replaced only when a durable run is restored). */
  get progress(): ProgressTracker {
    return this.#progress;
  }

  /** Every event recorded, redacted: `result.trace` (a resumed run's events before its snapshot are read here first). */
  get trace(): readonly TraceEvent[] {
    return this.#trace.events;
  }

  /** The trace's first event, without reading a resumed run's whole earlier trace from the journal. */
  get firstTraceEvent(): TraceEvent | undefined {
    return this.#trace.first;
  }

  /** How many events `trace` holds, without reading a resumed run's earlier ones from the journal. */
  get traceLength(): number {
    return this.#trace.length;
  }

  /** The trace from index `from` on (a resumed run's earlier events are read only when `from` reaches into them). */
  traceSince(from: number): TraceEvent[] {
    return this.#trace.since(from);
  }

  /** Trace sinks that could not be opened, said as warnings once the run has started. */
  get traceProblems(): readonly string[] {
    return this.#trace.problems;
  }

  get warnings(): readonly string[] {
    return this.#warnings;
  }

  /** Outputs of the tasks that passed evaluation, by task id; `result.taskOutputs` is this very object. */
  get taskOutputs(): Readonly<Record<string, unknown>> {
    return this.#taskOutputs;
  }

  /** The current task's conversation. */
  get transcript(): Transcript {
    return this.#transcript;
  }

  get taskIndex(): number {
    return this.#taskIndex;
  }

  /** The calls of the last model decision, waiting to be run or answered. */
  get pendingCalls(): readonly PendingCall[] {
    return this.#pendingCalls;
  }

  /** The current task's last model reply: what it is evaluated on, and the best partial output when it does not complete. */
  get lastReply(): string | null {
    return this.#lastReply;
  }

  /** What ended the run with `fatal_error`, for `result.error`. */
  get fatalError(): Error | null {
    return this.#fatalError;
  }

  /** The state the actor rests in, as the trace names it: the `from` of the next transition, named once. */
  get restingState(): string | null {
    return this.#restingState;
  }

  /** The last evaluation's reply and format-layer parse: a run that stops early reports it as its output. */
  get lastEvaluation(): LastEvaluation | null {
    return this.#lastEvaluation;
  }

  /**
   * The trace and warnings arrays themselves, for the run's result: what is said after it is built
   * (a trace sink that fails to close) still reaches the caller. The trace is the kept events (not the session) while a
   * resumed run's earlier events are still in the journal (read when the result's `trace` is: `withTrace`).
   */
  recordsForResult(): { trace: TraceEvent[] | KeptEvents; warnings: string[] } {
    return { trace: this.#trace.eventsForResult(), warnings: this.#warnings };
  }

  /** Model ids warned about as unpriced, for a durable run's journal. */
  get unpricedModelIds(): string[] {
    return this.#unpricedModels === undefined ? [] : [...this.#unpricedModels];
  }

  /** Start a fresh conversation for the task at `index`: each task is its own bounded loop. */
  beginTask(index: number): void {
    const prepared = this.preparedTask?.index === index ? this.preparedTask.transcript : null;
    this.preparedTask = null;
    this.#transcript = prepared ?? this.buildTranscript(index);
    this.#taskIndex = index;
    this.#pendingCalls = [];
    this.#lastReply = null;
    this.#progress.beginTask();
    this.plan?.reset();
  }

  /** The calls of a model decision (or a person's decisions on them), held until they are run or answered. */
  holdCalls(calls: readonly PendingCall[]): void {
    this.#pendingCalls = calls;
  }

  /** Hands over the held calls to be run or answered; none are held after. */
  takePendingCalls(): readonly PendingCall[] {
    const calls = this.#pendingCalls;
    this.#pendingCalls = [];
    return calls;
  }

  /** A reply with text: the one the task is evaluated on. */
  noteReply(text: string): void {
    this.#lastReply = text;
  }

  /** An evaluation of the last reply: a passing one's parsed output becomes the task's output. */
  recordEvaluation(
    summary: { passed: boolean; parsed: unknown; formatted: { value: unknown } | null },
    review?: ReviewRequest,
  ): void {
    if (summary.passed) this.#taskOutputs[this.task.id] = summary.parsed;
    this.#lastEvaluation = {
      taskIndex: this.#taskIndex,
      reply: this.#lastReply ?? '',
      formatted: summary.formatted,
      ...(review === undefined ? {} : { review }),
    };
  }

  /** The reply waiting for a person's review, when the last evaluation asked for one. */
  get pendingReview(): PendingReview | null {
    const evaluation = this.#lastEvaluation;
    if (evaluation?.review === undefined) return null;
    const { output, evaluator, reason, outputHash } = evaluation.review;
    const taskId = this.tasks[evaluation.taskIndex]?.id ?? this.task.id;
    return { taskId, output, rawOutput: evaluation.reply, reason, evaluator, outputHash, reviewId: null };
  }

  /** The error the run is about to end with (`run.faulted`, a fatal model error): `result.error`. */
  recordFatalError(error: Error): void {
    this.#fatalError = error;
  }

  /** The actor came to rest in `state` after an event. */
  noteRestingState(state: string): void {
    this.#restingState = state;
  }

  /** True while a durable run is rebuilt from its journal, its trace so far in `trace`. */
  get replaying(): boolean {
    return this.#trace.replaying;
  }

  /** Runs `rebuild` as a durable run's replay: events it records were delivered to the sinks the first time. */
  whileReplaying(rebuild: () => void): void {
    this.#trace.whileReplaying(rebuild);
  }

  /** Puts back what a durable run's journal recorded of the fields. */
  restoreFields(fields: RestoredSessionFields): void {
    this.#taskIndex = fields.taskIndex;
    this.#pendingCalls = fields.pendingCalls;
    this.#lastReply = fields.lastReply;
    this.#lastEvaluation = fields.lastEvaluation;
    this.#fatalError = fields.fatalError;
    this.#restingState = fields.restingState;
    if (fields.taskOutputs !== null) {
      // In place: the result hands out this very object.
      for (const key of Object.keys(this.#taskOutputs)) delete this.#taskOutputs[key];
      Object.assign(this.#taskOutputs, fields.taskOutputs);
    }
    if (fields.progress !== null) this.#progress = fields.progress;
    this.#unpricedModels = fields.unpricedModels.length === 0 ? undefined : new Set(fields.unpricedModels);
  }

  /** Puts back a journalled conversation: a fresh transcript when the record replaces it. */
  restoreTranscript(transcript: Transcript): void {
    this.#transcript = transcript;
  }

  /** Appends journalled trace events and warnings (`replace`: they are the whole of both, from a snapshot). */
  restoreRecorded(trace: readonly TraceEvent[] | EarlierTrace, warnings: readonly string[], replace: boolean): void {
    this.#trace.restore(trace, replace);
    if (replace) this.#warnings.length = 0;
    for (const warning of warnings) this.#warnings.push(warning);
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
  estimateNextRequest(extraChars = 0, transcript: Transcript = this.#transcript): number {
    return Math.min(transcript.estimateTokens(extraChars), this.config.context.maxInputTokensPerCall);
  }

  private buildTranscript(index: number): Transcript {
    const { config, tasks, goal, conversation, toolSpecChars, taskFeedback: feedback } = this;
    return taskTranscript(
      { config, tasks, goal, conversation, taskOutputs: this.#taskOutputs, toolSpecChars, feedback },
      index,
    );
  }

  /** Tools offered to the model: those whose circuit breaker is not open, by weight with `toolOrder: 'success_rate'`. */
  offeredTools(health: ToolHealth): ToolSpec[] {
    return offeredToolSpecs(this.tools, this.config.toolOrder, health);
  }

  /** After a tool round: every called tool's health and the order the next request offers the tools in. */
  recordToolHealth(health: ToolHealth, step: number, at: number): void {
    // Kept by the trace for the whole run: an exact-length copy, not the array `push` grew (17 slots for one name).
    const offered = offeredToolNames(this.tools, this.config.toolOrder, health).slice();
    this.record({
      type: 'tool-health',
      runId: this.runId,
      at,
      taskId: this.task.id,
      step,
      tools: toolHealthFigures(health),
      offered,
    });
  }

  /** Every event is redacted here, the one door to `result.trace` and every sink. */
  record(unredacted: TraceEvent): void {
    this.#trace.record(unredacted);
  }

  /** A live event (a streamed delta): redacted and handed to `onEvent`, never kept on `result.trace`. */
  recordLive(unredacted: TraceEvent): void {
    this.#trace.recordLive(unredacted);
  }

  /** True when live events have somewhere to go: a streaming model's progress is then worth reporting. */
  get wantsLiveEvents(): boolean {
    return this.#trace.wantsLiveEvents;
  }

  /**
   * The timer this run's calls re-arm for their timeouts, or null when the run's clock is not the system clock
   * (each call sets its own on the run's clock) or the run has ended.
   */
  get callTimer(): ReusableTimer | null {
    // Not `??=`: null (another clock, or the run has ended) stays null.
    if (this.#callTimer === undefined) this.#callTimer = reusableTimer(unguarded(this.config.clock));
    return this.#callTimer;
  }

  /** Clears the calls' timer at the run's end: a later call sets a timer of its own. Safe to call twice. */
  closeCallTimer(): void {
    this.#callTimer?.close();
    this.#callTimer = null;
  }

  /** Closes every sink (the trace file's descriptor, open spans); safe to call twice. */
  closeTrace(): void {
    this.#trace.close();
  }

  /** Warns once per model id that has no price: its spend is invisible to maxCostUsd. */
  warnIfUnpriced(modelId: string, at: number): void {
    if (priceOf(this.config.prices, modelId) !== undefined || this.#unpricedModels?.has(modelId) === true) return;
    (this.#unpricedModels ??= new Set()).add(modelId);
    this.warn(
      `no price for model "${modelId}": its cost counts as $0, so maxCostUsd cannot stop it; add it to \`prices\``,
      at,
    );
  }

  warn(unredacted: string, at: number): void {
    const message = this.config.redact.text(unredacted);
    this.#warnings.push(message);
    this.record({ type: 'warning', runId: this.runId, at, message });
  }
}
