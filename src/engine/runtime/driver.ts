/**
 * The driver: runs the loop machine (as an XState actor when a journal or an inspector needs one, else by its
 * transitions alone), performs the effect each resting state
 * requests, and sends the outcome back as an event. All I/O, time and
 * randomness live here; the machine stays a pure function of its events.
 */
import { modelFacts } from '../trace/model-facts.js';
import { Actor, createActor } from 'xstate';
import { getPendingEffect, loopMachine, type LoopSnapshot, type PendingEffect } from '../../../machines/index.js';
import type { LoopEvent } from '../../../machines/types.js';
import type { ResolvedConfig, RunInput } from '../config/config.js';
import { describeAbortReason } from '../hooks/abort-reason.js';
import { guardClock, safeNow } from '../hooks/guarded-clock.js';
import { defaultRunId, resolveRunId } from '../hooks/run-id.js';
import { ToolHealth } from '../tools/index.js';
import { LearningSession } from '../learning/learning-session.js';
import { describeThrown, errorFields, toError } from '../redaction/describe-thrown.js';
import { closedConversation, priorConversation } from '../conversation/prior-conversation.js';
import { summarize } from '../trace/trace-event.js';
import { recordContextChanges } from '../trace/context-changes.js';
import { recordMachineEvent } from '../trace/machine-events.js';
import { loopSetupOf, type LoopSetup } from './loop-setup.js';
import { TRACE_SCHEMA_VERSION } from '../../contracts/trace-schema.js';
import { finalOutput } from '../output/final-output.js';
import { guardedInspector } from './inspect-option.js';
import { performEvaluation } from './evaluation-step.js';
import { interruptionEvent as interruptionEventAt, RunInterruption } from './interruption.js';
import { RunAbort } from './abort-fanout.js';
import { performModelCall } from './model-step.js';
import type { RunResult } from './run-result.js';
import type { DriverHooks } from './driver-hooks.js';
import { RunSession } from './run-session.js';
import { loadOtelApi } from '../trace/otel/otel-api.js';
import { withTrace } from '../trace/run-trace.js';
import { deliveryFor, type Delivery } from './delivery.js';
import type { RunMachine } from './run-machine.js';
import { performToolRound } from './tool-step.js';

/** `parent.child` names, made once: a name per transition would otherwise be a new string every event. */
const nestedStateNames = new Map<string, Map<string, string>>();

function stateName(snapshot: LoopSnapshot): string {
  const value = snapshot.value;
  if (typeof value === 'string') return value;
  // The loop machine nests one level: `{ running: 'acting' }`.
  for (const parent in value) {
    const child = String((value as Record<string, unknown>)[parent]);
    let names = nestedStateNames.get(parent);
    if (names === undefined) nestedStateNames.set(parent, (names = new Map()));
    let name = names.get(child);
    if (name === undefined) names.set(child, (name = `${parent}.${child}`));
    return name;
  }
  return '?.?';
}

/** Runs one goal; `sharedHealth` is the loop's shared tool health, else this run gets its own. `hooks` make it durable. */
export async function driveRun(
  resolved: ResolvedConfig,
  sharedHealth: ToolHealth | undefined,
  input: RunInput,
  hooks?: DriverHooks,
): Promise<RunResult> {
  // User hooks (clock, run id, abort reason) end the run as fatal_error or cancelled, never reject it.
  const clock = guardClock(resolved.clock);
  const config: ResolvedConfig = { ...resolved, clock };
  const setup = loopSetupOf(resolved);
  const learning =
    config.learning === undefined || config.store === undefined
      ? null
      : new LearningSession(config.learning, config.store, config.name, config.tenant?.id ?? null, clock);
  const health = sharedHealth ?? learning?.health ?? new ToolHealth({ now: () => clock.now() });
  const { runId, fault: runIdFault } = resolveRunId(input.runId, config.generateRunId, defaultRunId);
  // A durable run's journal gets a controller to abort and listens on its signal; a run without one makes its
  // signal only if a tool, an evaluator or a model adapter reads it.
  const controller = hooks === undefined ? new RunAbort() : new AbortController();
  const conversation = priorConversation(input, config.instructions);
  // The first run of the process loads @opentelemetry/api (its trace sinks ask it whether an SDK is registered).
  const otelLoading = config.trace.otel === false ? undefined : loadOtelApi();
  if (otelLoading !== undefined) await otelLoading;
  const session = new RunSession(
    config,
    runId,
    conversation.goal,
    controller instanceof RunAbort ? controller : controller.signal,
    conversation,
    setup,
  );
  if (learning !== null) {
    session.taskFeedback = (taskId) => learning.feedbackFor(taskId);
    // Redacted before it is stored, as an evaluator's reason is.
    session.noteReviewVerdict = (taskId, accepted, reason) =>
      learning.noteEvaluation(taskId, accepted, config.redact.text(reason));
  }
  const inspect =
    config.inspect === undefined
      ? undefined
      : guardedInspector(config.inspect, (message) => session.warn(message, safeNow(clock)));
  // A resumed run starts from its journal's snapshot, a new one from the loop's kept initial state: cheaper than
  // XState's initial microstep, and an inspector sees the same events (the `xstate.init` snapshot in READY).
  // A journal persists an actor's snapshots and an inspector watches an actor; a run with neither needs none.
  const actor =
    hooks === undefined
      ? null
      : hooks.machineSnapshot === undefined
        ? setup.createRunActor(inspect)
        : createActor(loopMachine, {
            input: setup.machineInput,
            snapshot: hooks.machineSnapshot,
            ...(inspect === undefined ? {} : { inspect }),
          });
  const machine: RunMachine =
    actor ?? (inspect === undefined ? setup.createRunMachine() : setup.createRunActor(inspect));
  // An actor whose transition throws keeps its last state in an `error` snapshot (`send` then ends the run); an
  // observer of its errors keeps XState from also throwing the error, unhandled, on a later tick.
  if (machine instanceof Actor) machine.subscribe({ error: ignoreError });
  const onUserAbort = () => {
    controller.abort(new RunInterruption('cancelled', describeAbortReason(input.signal?.reason)));
  };
  input.signal?.addEventListener('abort', onUserAbort, { once: true });
  // Every event reaches the machine through `send`; the delivery decides what happens around it (a journal, a workflow step).
  const toMachine = (event: LoopEvent): void => send(machine, session, event);
  const delivery = deliveryFor(hooks === undefined || actor === null ? null : { hooks, actor }, session, toMachine);
  // One for the run, not one per effect: what an effect that throws or rejects ends in.
  const failed = (error: unknown): LoopEvent => effectFailure(session, error);
  let cancelDeadline: () => void = () => undefined;
  // Everything after the listener and timer are armed runs inside try, so they are always disarmed.
  try {
    try {
      // Before the first task's prompt is built: its prompt function sees the feedback.
      await learning?.load();
      machine.start();
      const restored =
        hooks !== undefined && actor !== null
          ? await hooks.restore({
              actor,
              session,
              health,
              send: toMachine,
              deliver: async (event) => delivery.deliver(event),
            })
          : false;
      // A resumed run's deadline counts from its start, on a clock that continues where the journal left off.
      const armed = armDeadline(config, controller, restored ? machine.getSnapshot().context.startedAt : null);
      cancelDeadline = armed.cancelDeadline;
      if (!restored) await startRun(delivery, session, setup, input, runIdFault ?? armed.fault);
      else if (armed.fault !== null && machine.getSnapshot().status !== 'done') {
        session.recordFatalError(armed.fault);
        await delivery.deliver({
          type: 'run.faulted',
          at: safeNow(clock),
          message: config.redact.text(describeThrown(armed.fault)),
        });
      }
      learning?.traceLoaded(session, safeNow(clock));
      // Aborted before the run began: the first effect sees it and sends run.cancelRequested.
      if (input.signal?.aborted) onUserAbort();
      for (;;) {
        const snapshot = machine.getSnapshot();
        const effect = getPendingEffect(snapshot);
        if (effect.kind === 'done') break;
        // Outcomes whose events are committed may be written: a resume never performs them again.
        // (A run with hooks has an AbortController: the `instanceof` only tells the compiler so.)
        const committed =
          hooks === undefined ||
          controller instanceof RunAbort ||
          (await hooks.beforeEffect(session, controller, effect.kind));
        if (learning !== null && committed) {
          learning.seal();
          if (learning.due(safeNow(clock))) await learning.flush(session);
        }
        await delivery.performAndDeliver(effect.kind, () =>
          learning === null
            ? perform(effect, snapshot, session, health, failed)
            : performLearning(effect, snapshot, session, health, learning, failed),
        );
      }
      if (learning !== null) {
        // The last outcomes, once the events they came from are committed.
        await hooks?.commit();
        learning.seal();
      }
    } finally {
      // The run's last batch, before run-end (the trace says what it wrote), however the drive ended: a
      // workflow's handoff, a drain, a store error. What the journal did not commit is left out: a resume redoes it.
      if (hooks === undefined) learning?.seal();
      await learning?.flush(session);
      try {
        cancelDeadline();
      } catch {
        // A clock whose cancel function throws: the run is over either way.
      }
      input.signal?.removeEventListener('abort', onUserAbort);
      session.closeCallTimer();
      machine.stop();
    }
    return buildResult(session, machine.getSnapshot());
  } finally {
    // After run-end: the trace file's descriptor and any open span, whatever ended the run.
    session.closeTrace();
  }
}

/** Arms the deadline timer; `deadlineMs: Infinity` arms none, and a clock whose `setTimer` throws faults the run. */
function armDeadline(
  config: ResolvedConfig,
  controller: AbortController | RunAbort,
  startedAt: number | null,
): { cancelDeadline: () => void; fault: Error | null } {
  const { deadlineMs } = config.limits;
  if (!Number.isFinite(deadlineMs)) return { cancelDeadline: () => undefined, fault: null };
  try {
    const remainingMs = startedAt === null ? deadlineMs : Math.max(0, startedAt + deadlineMs - config.clock.now());
    const cancel = config.clock.setTimer(remainingMs, () =>
      controller.abort(new RunInterruption('deadline', `deadline of ${deadlineMs} ms reached`)),
    );
    return { cancelDeadline: typeof cancel === 'function' ? cancel : () => undefined, fault: null };
  } catch (error) {
    return { cancelDeadline: () => undefined, fault: toError(error) };
  }
}

/** Starts the machine and the first task; a task prompt, run id hook or clock that throws faults the run instead of rejecting. */
async function startRun(
  delivery: Delivery,
  session: RunSession,
  setup: LoopSetup,
  input: RunInput,
  hookFault: Error | null,
): Promise<void> {
  const { config, runId } = session;
  let startFault: { error: Error; message: string } | null =
    hookFault === null ? null : { error: hookFault, message: describeThrown(hookFault) };
  let startedAt: number;
  try {
    startedAt = config.clock.now();
  } catch (error) {
    startFault ??= { error: toError(error), message: describeThrown(error) };
    startedAt = safeNow(config.clock);
  }
  session.record({
    type: 'run-start',
    runId,
    at: startedAt,
    schemaVersion: TRACE_SCHEMA_VERSION,
    goalSummary: summarize(input.goal ?? session.goal, config.redact),
    tasks: session.tasks.map((task) => task.id),
    name: config.name,
    modelId: config.model.id,
    ...modelFacts(config.model),
    promptVersion: setup.toolFacts(session.tools).promptVersion,
    // A copy: the event is the caller's (result.trace), the setup every run's.
    limits: { ...setup.tracedLimits },
  });
  // run-start comes first, so a reader of the trace meets the run before anything said about it.
  if (!setup.modelPriced) session.warnIfUnpriced(config.model.id, startedAt);
  for (const problem of session.traceProblems) session.warn(problem, startedAt);
  for (const deprecation of config.deprecations) session.warn(deprecation, startedAt);
  for (const warning of session.conversation.warnings) session.warn(warning, startedAt);
  try {
    if (startFault === null) session.beginTask(0);
  } catch (error) {
    startFault = { error: toError(error), message: describeThrown(error) };
  }
  await delivery.deliver({ type: 'run.started', at: startedAt, nextRequestTokens: session.estimateNextRequest() });
  if (startFault !== null) {
    session.recordFatalError(startFault.error);
    await delivery.deliver({ type: 'run.faulted', at: startedAt, message: config.redact.text(startFault.message) });
  }
}

/**
 * Performs an effect and resolves to its outcome event; a failure no retry layer covers becomes `run.faulted`.
 * No async frame of its own: the run holds this promise across the effect (a model call while many other runs
 * take their turns), and a frame and its await closures held that long outlive young GCs.
 */
function perform(
  effect: Exclude<PendingEffect, { kind: 'done' }>,
  snapshot: LoopSnapshot,
  session: RunSession,
  health: ToolHealth,
  failed: (error: unknown) => LoopEvent,
): Promise<LoopEvent> {
  if (session.aborts.aborted) return Promise.resolve(interruptionEvent(session));
  let outcome: Promise<LoopEvent> | LoopEvent;
  try {
    outcome = startEffect(effect, snapshot, session, health);
  } catch (error) {
    return Promise.resolve(failed(error));
  }
  return outcome instanceof Promise ? outcome.then(undefined, failed) : Promise.resolve(outcome);
}

/** Starts the effect: its outcome, or a promise of it. */
function startEffect(
  effect: Exclude<PendingEffect, { kind: 'done' }>,
  snapshot: LoopSnapshot,
  session: RunSession,
  health: ToolHealth,
): Promise<LoopEvent> | LoopEvent {
  switch (effect.kind) {
    case 'start':
      throw new Error('the loop machine is waiting for run.started after the driver started it');
    case 'callModel': {
      if (effect.taskIndex !== session.taskIndex) session.beginTask(effect.taskIndex);
      const withheld = session.task.requires?.find((name) => health.isOpen(name));
      if (withheld !== undefined) return { type: 'tool.withheld', at: session.config.clock.now(), tool: withheld };
      return performModelCall(session, health, snapshot.context);
    }
    case 'runTools':
      return performToolRound(session, health, snapshot.context);
    case 'evaluate':
      return performEvaluation(session, snapshot.context, effect.mayCallModel);
    case 'sleep':
      return waitOutBackoff(session, effect.until);
  }
}

async function waitOutBackoff(session: RunSession, until: number): Promise<LoopEvent> {
  const { clock } = session.config;
  // A replayed model's waits were waited out when it was recorded; no provider is there to wait for now.
  if (session.config.model.skipsBackoffWait !== true)
    await session.aborts.race(clock.sleep(Math.max(0, until - clock.now()), session.signal));
  return { type: 'backoff.elapsed', at: clock.now() };
}

/**
 * What an effect that threw or rejected ends in: the interruption when the run was aborted, else `run.faulted`
 * (no retry layer covers it: a throwing policy hook or task prompt, a bug), never a crash.
 */
function effectFailure(session: RunSession, error: unknown): LoopEvent {
  if (session.aborts.aborted) return interruptionEvent(session);
  const { clock } = session.config;
  session.recordFatalError(toError(error));
  return { type: 'run.faulted', at: safeNow(clock), message: session.config.redact.text(describeThrown(error)) };
}

/** `perform`, its evaluation verdicts noted for learning. */
async function performLearning(
  effect: Exclude<PendingEffect, { kind: 'done' }>,
  snapshot: LoopSnapshot,
  session: RunSession,
  health: ToolHealth,
  learning: LearningSession,
  failed: (error: unknown) => LoopEvent,
): Promise<LoopEvent> {
  const event = await perform(effect, snapshot, session, health, failed);
  // Redacted before it is stored: a reason may quote the output, and the store keeps it across runs.
  // A request for a person's review is no verdict: the person's decision is counted when it is applied.
  if (event.type === 'evaluation.completed' && event.needsReview !== true)
    learning.noteEvaluation(session.task.id, event.passed, session.config.redact.text(event.reason));
  return event;
}

function interruptionEvent(session: RunSession): LoopEvent {
  return interruptionEventAt(session.aborts, safeNow(session.config.clock));
}

/** The machine's errors are read from its snapshot (`send`). */
const ignoreError = (): void => undefined;

/**
 * The one place an event reaches the machine: the transition and what it changed go to the trace. A transition
 * that throws (a bug in the machine) rejects the run with its error, with or without an actor: an actor keeps
 * its last state in an `error` snapshot and drops later events, so the run would otherwise ask for the same
 * effect again and again; `ActorlessRun` throws it itself.
 */
function send(machine: RunMachine, session: RunSession, event: LoopEvent): void {
  const before = machine.getSnapshot();
  recordMachineEvent(session, event, before.context);
  machine.send(event);
  const after = machine.getSnapshot();
  // An Error always: a snapshot's error may be anything a transition threw (or a restored journal held).
  if (after.status === 'error') throw toError(after.error);
  const to = stateName(after);
  session.record({
    type: 'transition',
    runId: session.runId,
    at: event.at,
    event: event.type,
    from: session.restingState ?? stateName(before),
    to,
  });
  session.noteRestingState(to);
  recordContextChanges(
    session,
    session.runId,
    session.tasks[after.context.taskIndex]?.id ?? '',
    before.context,
    after.context,
    event,
  );
  noteWarnings(session, before.context, after.context, event.at);
}

/** Nudges and skipped tasks are decisions of the machine the caller should hear about. */
function noteWarnings(
  session: RunSession,
  before: LoopSnapshot['context'],
  after: LoopSnapshot['context'],
  at: number,
): void {
  if (after.progress.nudgedAtStep !== null && before.progress.nudgedAtStep !== after.progress.nudgedAtStep) {
    session.warn(`no-progress nudge at step ${after.steps}: ${after.progress.lastSignal}`, at);
  }
  if (after.failedTasks > before.failedTasks && after.taskIndex > before.taskIndex) {
    const task = session.tasks[before.taskIndex];
    session.warn(
      `task ${task?.id ?? before.taskIndex} failed (${after.failure?.reason}: ${after.failure?.detail}) and was skipped (onFailure: continue)`,
      at,
    );
  }
}

/**
 * The call that crosses a budget is let stand (the next one is refused), so a run can complete with a
 * budget passed by that one call, e.g. its last LLM judge: it says so rather than look within budget.
 */
function warnIfCompletedOverBudget(session: RunSession, usage: LoopSnapshot['context']['usage'], at: number): void {
  const { maxCostUsd, maxInputTokens, maxOutputTokens } = session.config.limits;
  const over = [
    usage.costUsd > maxCostUsd ? `cost $${usage.costUsd.toFixed(6)} passed maxCostUsd ($${maxCostUsd})` : null,
    usage.inputTokens > maxInputTokens
      ? `input tokens ${usage.inputTokens} passed maxInputTokens (${maxInputTokens})`
      : null,
    usage.outputTokens > maxOutputTokens
      ? `output tokens ${usage.outputTokens} passed maxOutputTokens (${maxOutputTokens})`
      : null,
  ].filter((text): text is string => text !== null);
  if (over.length > 0) session.warn(`completed, but its last model call went over a budget: ${over.join('; ')}`, at);
}

function buildResult(session: RunSession, snapshot: LoopSnapshot): RunResult {
  const output = snapshot.output;
  if (output === undefined) throw new Error('the loop machine stopped without an output');
  const completed = output.stopReason === 'completed';
  const lastTask = session.tasks[session.tasks.length - 1];
  const evaluated =
    lastTask !== undefined && lastTask.id in session.taskOutputs ? session.taskOutputs[lastTask.id] : undefined;
  // A task the machine moved on to but never started has no reply (an earlier task's answer is in taskOutputs, not passed off as this one's).
  const lastReplyIsCurrent = snapshot.context.taskIndex === session.taskIndex;
  const { output: result, rawOutput } = finalOutput({
    completed,
    evaluated,
    lastReply: session.lastReply,
    lastReplyIsCurrent,
    taskIndex: session.taskIndex,
    lastEvaluation: session.lastEvaluation,
  });
  const at = safeNow(session.config.clock);
  if (!completed && rawOutput !== null) {
    session.warn(`partial output: the run stopped (${output.stopReason}) before the last reply passed evaluation`, at);
  }
  if (completed) warnIfCompletedOverBudget(session, output.usage, at);
  session.record({
    type: 'run-end',
    runId: session.runId,
    at,
    status: output.status,
    stopReason: output.stopReason,
    detail: output.detail,
    usage: output.usage,
    steps: output.steps,
  });
  const pendingApprovals =
    output.stopReason === 'needs_human'
      ? session.pendingCalls
          .filter(({ call }) => call.status === 'needs_approval')
          .map(({ call }) => ({ callId: call.request.id, tool: call.request.name, args: call.args }))
      : [];
  const fatal = output.stopReason === 'fatal_error' ? session.fatalError : null;
  const { redact } = session.config;
  const { trace, warnings } = session.recordsForResult();
  return withTrace(trace, {
    runId: session.runId,
    status: output.status,
    stopReason: output.stopReason,
    detail: redact.text(output.detail),
    output: result,
    rawOutput,
    taskOutputs: session.taskOutputs,
    warnings,
    usage: output.usage,
    steps: output.steps,
    trace: [],
    messages: closedConversation(session.transcript.messages, output.stopReason),
    pendingApprovals,
    // A run waits for approvals or for a review, never both: a review is asked only of a final reply.
    pendingReview: output.stopReason === 'needs_human' && pendingApprovals.length === 0 ? session.pendingReview : null,
    ...(fatal ? { error: redact.strings(errorFields(fatal)) } : {}),
  });
}
