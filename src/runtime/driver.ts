/**
 * The driver: runs the loop machine as an actor, performs the effect each resting state
 * requests, and sends the outcome back as an event (DESIGN §12). All I/O, time and
 * randomness live here; the machine stays a pure function of its events.
 */
import { createActor, type Actor } from 'xstate';
import { getPendingEffect, loopMachine, type LoopMachine, type LoopSnapshot, type PendingEffect } from '../../machines/index.js';
import type { LoopEvent, TaskPlan } from '../../machines/types.js';
import type { ResolvedConfig, RunInput } from '../config.js';
import { closedConversation, priorConversation } from '../conversation/prior-conversation.js';
import type { ToolHealth } from '../tools/index.js';
import { summarize } from '../trace/trace-event.js';
import { performEvaluation } from './evaluation-step.js';
import { interruptionOf, RunInterruption, untilAborted } from './interruption.js';
import { performModelCall } from './model-step.js';
import type { RunResult } from './run-result.js';
import { RunSession } from './run-session.js';
import { performToolRound } from './tool-step.js';

function stateName(snapshot: LoopSnapshot): string {
  const value = snapshot.value;
  if (typeof value === 'string') return value;
  const [parent, child] = Object.entries(value)[0] ?? ['?', '?'];
  return `${parent}.${String(child)}`;
}

export async function driveRun(config: ResolvedConfig, health: ToolHealth, input: RunInput): Promise<RunResult> {
  const { clock } = config;
  const runId = input.runId ?? config.generateRunId();
  const controller = new AbortController();
  const conversation = priorConversation(input, config.instructions);
  const session = new RunSession(config, runId, conversation.goal, controller.signal, conversation);
  const tasks: TaskPlan[] = session.tasks.map((task) => ({ id: task.id, onFailure: task.onFailure ?? 'stop' }));
  const actor = createActor(loopMachine, { input: { limits: config.limits, noProgress: config.noProgress, tasks } });
  const onUserAbort = () => {
    const reason: unknown = input.signal?.reason;
    controller.abort(new RunInterruption('cancelled', reason instanceof Error ? reason.message : summarize(reason ?? 'cancelled')));
  };
  input.signal?.addEventListener('abort', onUserAbort, { once: true });
  const cancelDeadline = clock.setTimer(config.limits.deadlineMs, () =>
    controller.abort(new RunInterruption('deadline', `deadline of ${config.limits.deadlineMs} ms reached`)),
  );
  // Everything after the listener and timer are armed runs inside try, so they are always disarmed.
  try {
    actor.start();
    startRun(actor, session, input);
    // Aborted before the run began: the first effect sees it and sends run.cancelRequested.
    if (input.signal?.aborted) onUserAbort();
    for (;;) {
      const snapshot = actor.getSnapshot();
      const effect = getPendingEffect(snapshot);
      if (effect.kind === 'done') break;
      send(actor, session, await perform(effect, snapshot, session, health));
    }
  } finally {
    cancelDeadline();
    input.signal?.removeEventListener('abort', onUserAbort);
    actor.stop();
  }
  return buildResult(session, actor.getSnapshot());
}

/** Starts the machine and the first task; a task prompt that throws faults the run instead of rejecting. */
function startRun(actor: Actor<LoopMachine>, session: RunSession, input: RunInput): void {
  const { config, runId } = session;
  const startedAt = config.clock.now();
  session.warnIfUnpriced(config.model.id, startedAt);
  session.record({ type: 'run-start', runId, at: startedAt, goalSummary: summarize(input.goal ?? session.goal), tasks: session.tasks.map((task) => task.id), modelId: config.model.id });
  for (const warning of session.conversation.warnings) session.warn(warning, startedAt);
  let startFault: Error | null = null;
  try {
    session.beginTask(0);
  } catch (error) {
    startFault = error instanceof Error ? error : new Error(String(error));
  }
  send(actor, session, { type: 'run.started', at: startedAt, nextRequestTokens: session.transcript.estimateTokens() });
  if (startFault !== null) {
    session.fatalError = startFault;
    send(actor, session, { type: 'run.faulted', at: startedAt, message: `${startFault.name}: ${startFault.message}` });
  }
}

async function perform(effect: Exclude<PendingEffect, { kind: 'done' }>, snapshot: LoopSnapshot, session: RunSession, health: ToolHealth): Promise<LoopEvent> {
  const { clock } = session.config;
  if (session.signal.aborted) return interruptionEvent(session);
  try {
    switch (effect.kind) {
      case 'start':
        throw new Error('the loop machine is waiting for run.started after the driver started it');
      case 'callModel': {
        if (effect.taskIndex !== session.taskIndex) session.beginTask(effect.taskIndex);
        const withheld = session.task.requires?.find((name) => health.isOpen(name));
        if (withheld !== undefined) return { type: 'tool.withheld', at: clock.now(), tool: withheld };
        return await performModelCall(session, health, snapshot.context);
      }
      case 'runTools':
        return await performToolRound(session, health, snapshot.context);
      case 'evaluate':
        return await performEvaluation(session, effect.mayCallModel);
      case 'sleep':
        await untilAborted(clock.sleep(Math.max(0, effect.until - clock.now()), session.signal), session.signal);
        return { type: 'backoff.elapsed', at: clock.now() };
    }
  } catch (error) {
    if (session.signal.aborted) return interruptionEvent(session);
    // No retry layer covers this (a throwing policy hook or task prompt, a bug): stop with fatal_error, never crash.
    const fault = error instanceof Error ? error : new Error(String(error));
    session.fatalError = fault;
    return { type: 'run.faulted', at: clock.now(), message: `${fault.name}: ${fault.message}` };
  }
}

function interruptionEvent(session: RunSession): LoopEvent {
  const interruption = interruptionOf(session.signal);
  const at = session.config.clock.now();
  return interruption.kind === 'deadline'
    ? { type: 'run.deadlineReached', at }
    : { type: 'run.cancelRequested', at, message: interruption.message };
}

function send(actor: Actor<LoopMachine>, session: RunSession, event: LoopEvent): void {
  const before = actor.getSnapshot();
  actor.send(event);
  const after = actor.getSnapshot();
  session.record({ type: 'transition', runId: session.runId, at: event.at, event: event.type, from: stateName(before), to: stateName(after) });
  noteWarnings(session, before.context, after.context, event.at);
}

/** Nudges and skipped tasks are decisions of the machine the caller should hear about. */
function noteWarnings(session: RunSession, before: LoopSnapshot['context'], after: LoopSnapshot['context'], at: number): void {
  if (after.progress.nudgedAtStep !== null && before.progress.nudgedAtStep !== after.progress.nudgedAtStep) {
    session.warn(`no-progress nudge at step ${after.steps}: ${after.progress.lastSignal}`, at);
  }
  if (after.failedTasks > before.failedTasks && after.taskIndex > before.taskIndex) {
    const task = session.tasks[before.taskIndex];
    session.warn(`task ${task?.id ?? before.taskIndex} failed (${after.failure?.reason}: ${after.failure?.detail}) and was skipped (onFailure: continue)`, at);
  }
}

function buildResult(session: RunSession, snapshot: LoopSnapshot): RunResult {
  const output = snapshot.output;
  if (output === undefined) throw new Error('the loop machine stopped without an output');
  const completed = output.stopReason === 'completed';
  const lastTask = session.tasks[session.tasks.length - 1];
  const evaluated = lastTask !== undefined && lastTask.id in session.taskOutputs ? session.taskOutputs[lastTask.id] : undefined;
  // The best partial output is the unfinished task's own last reply; a task the machine moved on to
  // but never started has none (an earlier task's answer is in taskOutputs, not passed off as this one's).
  const partial = snapshot.context.taskIndex === session.taskIndex ? session.lastReply : null;
  const result: unknown = (completed ? evaluated : partial) ?? null;
  const at = session.config.clock.now();
  if (!completed && result !== null) {
    session.warn(`partial output: the run stopped (${output.stopReason}) before the last reply passed evaluation`, at);
  }
  session.record({ type: 'run-end', runId: session.runId, at, status: output.status, stopReason: output.stopReason, detail: output.detail, usage: output.usage, steps: output.steps });
  const fatal = output.stopReason === 'fatal_error' ? session.fatalError : null;
  return {
    runId: session.runId,
    status: output.status,
    stopReason: output.stopReason,
    detail: output.detail,
    output: result,
    taskOutputs: session.taskOutputs,
    warnings: session.warnings,
    usage: output.usage,
    steps: output.steps,
    trace: session.trace,
    messages: closedConversation(session.transcript.messages, output.stopReason),
    pendingApprovals: output.stopReason === 'needs_human'
      ? session.pendingCalls.filter(({ call }) => call.status === 'needs_approval').map(({ call }) => ({ callId: call.request.id, tool: call.request.name, args: call.args }))
      : [],
    ...(fatal ? { error: { name: fatal.name, message: fatal.message, ...('code' in fatal && typeof fatal.code === 'string' ? { code: fatal.code } : {}) } } : {}),
  };
}
