/**
 * Replays a path of the abstract exploration against the real runtime: `createLoop` with a scripted
 * model, shared tools, a rule evaluator and a replay clock, arranged so that the driver produces the
 * path's outcome events one by one. Each double reads the abstract step being produced (a cursor moved
 * by the driver's `transition` trace records) and acts it out:
 * - model.responded: a reply, tool call(s) or empty reply with the step's usage; the digest repeats when
 *   the reply repeats the last one (same text, same calls), and a tool call never made before changes it;
 * - model.failed: HTTP 503 (the backoff is `retry` 20/20 ms with `random` 0.5: exactly 10 ms), 503 with a
 *   Retry-After of the whole deadline, or HTTP 401;
 * - tools.completed: a lookup returning something new or something the run has seen, a slow tool timed out
 *   on the run's clock, a non-idempotent write timing out (unknown outcome), or the required tool failing
 *   into an open circuit;
 * - evaluation.completed: the rule evaluator's verdict; "past" outcomes are observed after the deadline;
 * - cancel / deadline: the user's signal aborts, or the clock reaches the deadline timer, inside the model
 *   call, the evaluator or the sleep, and just before a tool round (the runtime reports a round that was cut
 *   short as a completed round, by design, so an interruption instead of a round happens between effects);
 * - run.faulted: the clock throws as an effect starts;
 * - tool.withheld: the required tool's circuit opens before the model call (as another run of the same loop,
 *   sharing its `toolHealth`, would open it).
 * The run then has to take the path's route (event and state of every transition) and end with the output
 * the machine computed for the path's final state.
 */
import { z } from 'zod';
import { getPendingEffect, type PendingEffect } from '../../machines/pending-effect.js';
import type { ModelDecision } from '../../machines/types.js';
import { createLoop, defineTool, evaluators, ToolHealth, type RunResult, type Tool, type ToolPolicy } from 'loopstate';
import {
  emptyReply,
  modelError,
  reply,
  scriptedModel,
  toolCall,
  type ScriptedResponse,
  type ScriptStepResult,
} from 'loopstate/testing';
import { CHARS_PER_TOKEN_ESTIMATE } from '../../src/engine/constants.js';
import {
  ABSTRACT_PRICE,
  ABSTRACT_TIME,
  OUTCOME_TEXT,
  REVIEW_REASON,
  type ModelConfiguration,
} from './abstract-events.js';
import type { LabelledPath, LabelledStep } from './loop-graph.js';
import { checkReplay, roundClassOf } from './replay-checks.js';
import { injectedFault, ReplayClock } from './replay-clock.js';

export const REPLAY_TOOL_TIMEOUT_MS = 50;
/** Slow tools, one per timeout in a run, so that every timeout is a new observation and no circuit opens. */
const SLOW_TOOL_COUNT = 4;
export const SKIP_REASONS = Object.freeze({
  beforeStart: 'an interruption before run.started: the driver sends run.started itself before it performs any effect',
  unactable:
    'a reply repeated verbatim cannot bring the round the path asks for (its call never succeeded in the task, or cannot time out or fail as asked)',
});

export type ReplayVerdict =
  { status: 'agreed' } | { status: 'disagreed'; problems: string[] } | { status: 'skipped'; reason: string };

export interface ReplayHarness {
  replay(path: LabelledPath): Promise<ReplayVerdict>;
}

export type EffectKind = PendingEffect['kind'];

export function effectOf(step: LabelledStep): EffectKind {
  return getPendingEffect(step.state).kind;
}

type DecisionClass =
  'final' | 'unparseable' | 'tools' | 'tools-invalid' | 'tools-denied' | 'tools-approval' | 'tools-unavailable';

function decisionClassOf(decision: ModelDecision): DecisionClass {
  if (decision.kind !== 'tool_calls') return decision.kind;
  if (decision.invalidCalls > 0) return 'tools-invalid';
  if (decision.deniedCalls > 0) return 'tools-denied';
  if (decision.approvalCalls > 0) return 'tools-approval';
  if (decision.unavailableCalls > 0) return 'tools-unavailable';
  return 'tools';
}

/** One run of one path: the cursor, the doubles' state and what the run must end with. */
class PathReplay {
  readonly userAbort = new AbortController();
  readonly problems: string[] = [];
  /** Index of the abstract step the runtime is producing now; moved by every `transition` trace record. */
  cursor = 0;
  lastResponse: ScriptedResponse | null = null;
  slowToolsUsed = 0;
  /** The result each lookup id last brought, per task: an "ok-seen" round repeats it. */
  readonly lookupResults = new Map<string, string>();
  /** The lookup id of the task's last successful lookup, which an "ok-seen" round calls again. */
  lastLookupId: string | null = null;
  lookupTask = -1;
  /** The plan item that plan rounds keep open; a progressed round closes it and opens the next. */
  planItem = 0;
  /** Set when the path asks for something a verbatim repeat cannot do: the replay is skipped, not failed. */
  unactable = false;
  readonly deadlineAt: number;

  constructor(
    readonly config: ModelConfiguration,
    readonly steps: readonly LabelledStep[],
    readonly health: ToolHealth,
    readonly clock: ReplayClock,
  ) {
    this.deadlineAt = ABSTRACT_TIME.startAt + config.limits.deadlineMs;
  }

  /** The step being produced, checked to be one the effect in hand can produce. */
  expect(effect: EffectKind, what: string): LabelledStep | null {
    const step = this.steps[this.cursor];
    if (step === undefined || effectOf(step) !== effect) {
      this.problems.push(`${what} at step ${this.cursor}, where the path has ${step?.label ?? 'ended'}`);
      return null;
    }
    return step;
  }

  isPast(step: LabelledStep): boolean {
    return step.event.at >= this.deadlineAt;
  }

  /** Called after every transition the driver makes: move on, and arrange what must happen before the next effect. */
  onTransition(): void {
    this.cursor += 1;
    const next = this.steps[this.cursor];
    if (next === undefined) return;
    const effect = effectOf(next);
    if (next.event.type === 'tool.withheld') {
      while (!this.health.isOpen(OUTCOME_TEXT.requiredTool)) this.health.recordFailure(OUTCOME_TEXT.requiredTool, 0);
    } else if (effect === 'callModel' && next.event.type === 'run.faulted') {
      // Fails as the model step starts, before the model is called: a fault with no usage to count.
      // (A fault after the call, from a throwing policy hook, carries the call's usage: see replay.test.ts.)
      this.clock.failNextNow();
    } else if (effect === 'runTools') {
      if (next.event.type === 'run.cancelRequested') this.cancel();
      if (next.event.type === 'run.deadlineReached') this.clock.advanceTo(this.deadlineAt);
      if (next.event.type === 'run.faulted') this.clock.failNextNow();
    } else if (effect === 'sleep') {
      this.clock.sleeper = (ms, signal, clock) => this.sleep(ms, signal, clock);
    }
  }

  cancel(): void {
    this.userAbort.abort(new Error(OUTCOME_TEXT.cancelled));
  }

  modelStep(): ScriptStepResult {
    const step = this.expect('callModel', 'model called');
    if (step === null) return reply('(off the path)');
    const { event } = step;
    switch (event.type) {
      case 'model.responded': {
        if (this.isPast(step)) this.clock.observeLateAt(this.deadlineAt);
        const sameDigest = event.stateDigest === step.state.context.progress.lastStateDigest;
        const response = this.responseFor(decisionClassOf(event.decision), sameDigest, event.usage);
        this.lastResponse = response;
        return response;
      }
      case 'model.failed': {
        if (this.isPast(step)) this.clock.observeLateAt(this.deadlineAt);
        if (event.failure === 'fatal') return modelError({ status: 401, message: OUTCOME_TEXT.fatalFailure });
        const retryAfter =
          event.retryDelayMs > ABSTRACT_TIME.shortRetryDelayMs ? { retryAfterMs: event.retryDelayMs } : {};
        return modelError({ status: 503, message: OUTCOME_TEXT.transientFailure, ...retryAfter });
      }
      case 'run.cancelRequested':
        this.cancel();
        return reply('(cancelled meanwhile)');
      case 'run.deadlineReached':
        this.clock.advanceTo(this.deadlineAt);
        return reply('(too late)');
      default:
        this.problems.push(`model called for ${step.label}`);
        return reply('(off the path)');
    }
  }

  responseFor(
    decision: DecisionClass,
    sameDigest: boolean,
    usage: { inputTokens: number; outputTokens: number },
  ): ScriptedResponse {
    const options = { usage: { inputTokens: usage.inputTokens, outputTokens: usage.outputTokens } };
    const step = this.cursor;
    const last = this.lastResponse;
    if (sameDigest && decision !== 'unparseable') {
      // The abstraction offers "same" only where the last reply is of the same family: repeat it verbatim.
      if (last === null) this.problems.push(`step ${step}: a repeated digest without an earlier reply`);
      else {
        if (!this.canRepeatInto(last)) this.unactable = true;
        return { ...last, usage: options.usage };
      }
    }
    switch (decision) {
      case 'final':
        return reply(`answer ${step}`, options);
      case 'unparseable':
        return emptyReply(options);
      case 'tools':
        return this.toolsForNextRound(step, options);
      case 'tools-invalid':
        // A number where the schema wants a string: always `invalid_arguments:lookup:id`, new raw arguments each time.
        return toolCall('lookup', `{"id": ${step}}`, options);
      case 'tools-denied':
        return toolCall('forbidden', { id: `d${step}` }, options);
      case 'tools-approval':
        return toolCall('wipe', { id: `w${step}` }, options);
      case 'tools-unavailable':
        return toolCall('broken', { id: `b${step}` }, options);
    }
  }

  /** Whether repeating `last` verbatim can bring the round that follows on the path. */
  canRepeatInto(last: ScriptedResponse): boolean {
    const next = this.steps[this.cursor + 1];
    if (next?.event.type !== 'tools.completed') return true;
    const name = last.toolCalls[0]?.name;
    switch (roundClassOf(next.event.round)) {
      case 'ok-new':
        return name === 'lookup';
      case 'ok-seen':
        return name === 'lookup' && last.toolCalls[0]?.arguments === JSON.stringify({ id: this.lastLookupId });
      case 'timeout':
        return name?.startsWith('slow_') === true;
      case 'unknown-outcome':
        return name === 'write_record';
      case 'required-unavailable':
        return name === OUTCOME_TEXT.requiredTool;
      case 'plan-open':
        // The same plan again closes nothing new: a plan update that did not progress.
        return name === 'update_plan';
      case 'plan-progressed':
        return false;
    }
  }

  /** The call a new tool reply makes, chosen by the round that follows it on the path. */
  toolsForNextRound(step: number, options: { usage: { inputTokens: number; outputTokens: number } }): ScriptedResponse {
    const next = this.steps[this.cursor + 1];
    const round = next?.event.type === 'tools.completed' ? roundClassOf(next.event.round) : 'ok-new';
    switch (round) {
      case 'timeout':
        return toolCall(`slow_${this.slowToolsUsed++}`, { id: `n${step}` }, options);
      case 'unknown-outcome':
        return toolCall('write_record', { id: `n${step}` }, options);
      case 'required-unavailable':
        return toolCall(OUTCOME_TEXT.requiredTool, { id: `n${step}` }, options);
      case 'plan-open':
        return toolCall(
          'update_plan',
          { items: [{ id: `item-${this.planItem}`, title: `step ${step}`, status: 'in_progress' }] },
          options,
        );
      case 'plan-progressed':
        // The open item is done and the next one is open: progress, one item open.
        this.planItem += 1;
        return toolCall(
          'update_plan',
          {
            items: [
              { id: `item-${this.planItem - 1}`, title: `step ${step}`, status: 'done' },
              { id: `item-${this.planItem}`, title: `step ${step}`, status: 'in_progress' },
            ],
          },
          options,
        );
      case 'ok-seen':
        // The task's last successful call again, with new words around it so the reply (and the digest) changes.
        return toolCall('lookup', { id: this.lastLookupId ?? 'none yet' }, { ...options, text: `again ${step}` });
      case 'ok-new':
        return toolCall('lookup', { id: `n${step}` }, options);
    }
  }

  lookupResult(id: string): string {
    const step = this.expect('runTools', 'lookup ran');
    if (step === null || step.event.type !== 'tools.completed') return '(off the path)';
    if (this.isPast(step)) this.clock.observeLateAt(this.deadlineAt);
    const taskIndex = step.state.context.taskIndex;
    if (taskIndex !== this.lookupTask) {
      this.lookupTask = taskIndex;
      this.lookupResults.clear();
      this.lastLookupId = null;
    }
    const roundClass = roundClassOf(step.event.round);
    if (roundClass !== 'ok-new' && roundClass !== 'ok-seen') this.unactable = true;
    const seen = this.lookupResults.get(id);
    if (roundClass === 'ok-seen' && (seen === undefined || id !== this.lastLookupId)) this.unactable = true;
    // A round whose next request is over the input budget brings a result that large (the replay allows 64 KB results there).
    const huge = step.event.nextRequestTokens > this.config.limits.maxInputTokens;
    const fresh = huge
      ? `record ${this.cursor} ${'h'.repeat(CHARS_PER_TOKEN_ESTIMATE * this.config.limits.maxInputTokens)}`
      : `record ${this.cursor}`;
    const content = roundClass === 'ok-seen' && seen !== undefined ? seen : fresh;
    this.lookupResults.set(id, content);
    this.lastLookupId = id;
    return content;
  }

  /** Runs out the tool's timeout on the run's clock and never settles. */
  hangPastTimeout(): Promise<never> {
    this.clock.advance(REPLAY_TOOL_TIMEOUT_MS);
    return new Promise<never>(() => {});
  }

  verdict(): true | string | { review: string } {
    const step = this.expect('evaluate', 'evaluator ran');
    if (step === null) return true;
    switch (step.event.type) {
      case 'evaluation.completed':
        if (this.isPast(step)) this.clock.observeLateAt(this.deadlineAt);
        if (step.event.needsReview === true) return { review: step.event.reason };
        return step.event.passed ? true : step.event.reason;
      case 'run.cancelRequested':
        this.cancel();
        return true;
      case 'run.deadlineReached':
        this.clock.advanceTo(this.deadlineAt);
        return true;
      case 'run.faulted':
        // The driver reads the clock right after the evaluators.
        this.clock.failNextNow();
        return true;
      default:
        this.problems.push(`evaluator ran for ${step.label}`);
        return true;
    }
  }

  sleep(ms: number, signal: AbortSignal, clock: ReplayClock): Promise<void> {
    const step = this.expect('sleep', 'slept');
    switch (step?.event.type) {
      case 'backoff.elapsed':
        if (this.isPast(step)) clock.observeLateAt(this.deadlineAt);
        else clock.advance(ms);
        return Promise.resolve();
      // Both arrive while the run sleeps, once the driver is listening to the run's signal.
      case 'run.cancelRequested':
        return Promise.resolve().then(() => {
          this.cancel();
          return Promise.reject(signal.reason as Error);
        });
      case 'run.deadlineReached':
        return Promise.resolve().then(() => {
          clock.advanceTo(this.deadlineAt);
          return Promise.reject(signal.reason as Error);
        });
      case 'run.faulted':
        return Promise.reject(injectedFault());
      default:
        clock.advance(ms);
        return Promise.resolve();
    }
  }
}

/** Tools, evaluator and policy shared by the replays of one configuration; each acts for the replay in progress. */
export function createReplayHarness(config: ModelConfiguration): ReplayHarness {
  let active: PathReplay | null = null;
  const replaying = (): PathReplay => {
    if (active === null) throw new Error('no replay in progress');
    return active;
  };
  const input = z.object({ id: z.string() });
  const tool = (name: string, access: Tool['access'], execute: () => unknown, timeoutMs?: number): Tool =>
    defineTool({
      name,
      description: `Replay double ${name}`,
      input,
      access,
      execute,
      ...(timeoutMs === undefined ? {} : { timeoutMs }),
    });
  const tools: Tool[] = [
    defineTool({
      name: 'lookup',
      description: 'Replay double lookup',
      input,
      access: 'read',
      execute: ({ id }) => replaying().lookupResult(id),
    }),
    ...Array.from({ length: SLOW_TOOL_COUNT }, (_, index) =>
      tool(`slow_${index}`, 'read', () => replaying().hangPastTimeout(), REPLAY_TOOL_TIMEOUT_MS),
    ),
    // A write is not idempotent by default, and without `checkOutcome` its timeout leaves the outcome unknown.
    tool('write_record', 'write', () => replaying().hangPastTimeout(), REPLAY_TOOL_TIMEOUT_MS),
    tool(OUTCOME_TEXT.requiredTool, 'read', () => {
      throw new Error('required tool failed');
    }),
    tool('broken', 'read', () => 'never runs: its circuit is open'),
    tool('forbidden', 'read', () => 'never runs: the policy denies it'),
    tool('wipe', 'destructive', () => 'never runs: it needs approval'),
  ];
  const policy: ToolPolicy = {
    decide: ({ tool: called }) => {
      if (called.name === 'forbidden') return 'deny';
      return undefined;
    },
  };
  // The rule gives the replayed pass or failure; a replayed request for review passes it, and the review asks.
  let asksForReview = false;
  const evaluate = [
    evaluators.rule(() => {
      const verdict = replaying().verdict();
      asksForReview = typeof verdict === 'object';
      return typeof verdict === 'object' ? true : verdict;
    }, 'the replayed verdict'),
    evaluators.review({ when: () => asksForReview, reason: REVIEW_REASON }),
  ];

  return {
    async replay(path) {
      const [first] = path.steps;
      if (first === undefined || first.event.type !== 'run.started')
        return { status: 'skipped', reason: SKIP_REASONS.beforeStart };
      // Withheld and faulted steps end before the model is called.
      const callsWithheldTool = path.steps.some((step) => step.label.includes(':tools-unavailable'));
      const modelCalls = path.steps.filter(
        (step) =>
          effectOf(step) === 'callModel' && step.event.type !== 'tool.withheld' && step.event.type !== 'run.faulted',
      ).length;
      const model = scriptedModel(Array.from({ length: modelCalls }, () => () => replaying().modelStep()));
      const clock = new ReplayClock(ABSTRACT_TIME.startAt);
      // Shared on purpose: the replay pre-opens circuits before the run.
      const toolHealth = new ToolHealth({ now: () => clock.now() });
      const loop = createLoop({
        toolHealth,
        model,
        tools,
        evaluate,
        policy,
        // A call to a withheld tool stops the run only when the task needs it: with `requires` declared the
        // required tool is withheld before any call, so a path that calls the withheld `broken` tool runs
        // tasks that declare no requirements (the two never share a path: each ends the run).
        tasks: config.tasks.map((task) => ({
          id: task.id,
          prompt: `Do ${task.id}.`,
          onFailure: task.onFailure,
          ...(callsWithheldTool ? {} : { requires: [OUTCOME_TEXT.requiredTool] }),
        })),
        limits: config.limits,
        noProgress: config.noProgress,
        plan: config.plan,
        prices: { [model.id]: ABSTRACT_PRICE },
        retry: { baseMs: 2 * ABSTRACT_TIME.shortRetryDelayMs, maxMs: 2 * ABSTRACT_TIME.shortRetryDelayMs },
        random: () => 0.5,
        clock,
        generateRunId: () => 'replay',
        trace: {
          inMemory: true,
          onEvent: (event) => {
            if (event.type === 'transition') replaying().onTransition();
          },
        },
      });
      const replay = new PathReplay(config, path.steps, toolHealth, clock);
      prepareHealth(toolHealth, path.steps);
      const overBudget = first.event.nextRequestTokens > config.limits.maxInputTokens;
      // A goal this long makes the first request's estimate alone exceed the input budget.
      const goal = overBudget
        ? 'x'.repeat(4 * (config.limits.maxInputTokens + 1))
        : 'Replay one path of the loop statechart.';
      active = replay;
      let result: RunResult;
      try {
        result = await loop.run({ goal, signal: replay.userAbort.signal });
      } finally {
        active = null;
      }
      if (model.remaining > 0) replay.problems.push(`${model.remaining} planned model call(s) not made`);
      const problems = [...replay.problems, ...checkReplay(path, result)];
      if (replay.unactable && problems.length > 0) return { status: 'skipped', reason: SKIP_REASONS.unactable };
      return problems.length === 0 ? { status: 'agreed' } : { status: 'disagreed', problems };
    },
  };
}

/** `broken` is always withheld; the required tool is one failure from opening when the path needs it to open in a round. */
function prepareHealth(health: ToolHealth, steps: readonly LabelledStep[]): void {
  for (let failures = 0; failures < health.threshold; failures += 1) health.recordFailure('broken', 0);
  const opensInRound = steps.some(
    (step) => step.event.type === 'tools.completed' && step.event.round.requiredToolUnavailable,
  );
  if (opensInRound)
    for (let failures = 1; failures < health.threshold; failures += 1)
      health.recordFailure(OUTCOME_TEXT.requiredTool, 0);
}
