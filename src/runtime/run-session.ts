/**
 * The mutable, driver-side state of one run: transcript, trace, warnings, progress facts.
 * The machine holds only constant-size counters; everything that grows lives here, appended
 * to in place so a step costs the same at step 3 and at step 300.
 */
import type { ResolvedConfig, TaskConfig } from '../config.js';
import type { ToolSpec } from '../model/types.js';
import { ProgressTracker } from '../progress/index.js';
import type { PreparedCall } from '../tools/index.js';
import type { TraceEvent } from '../trace/trace-event.js';
import { Transcript } from './transcript.js';
import type { PendingApproval } from './run-result.js';

export class RunSession {
  readonly progress = new ProgressTracker();
  readonly trace: TraceEvent[] = [];
  readonly warnings: string[] = [];
  readonly taskOutputs: Record<string, unknown> = {};
  readonly pendingApprovals: PendingApproval[] = [];
  readonly tasks: readonly TaskConfig[];
  transcript: Transcript;
  taskIndex = -1;
  /** Calls of the last model decision, waiting to be run or answered. */
  pendingCalls: PreparedCall[] = [];
  /** For each pending call, how often its fingerprint has been requested in the run. */
  pendingRepeatCounts: number[] = [];
  /** Text of the last model reply in this run, the best partial output when a run does not complete. */
  lastReply: string | null = null;
  fatalError: Error | null = null;
  private readonly toolSpecChars: number;

  constructor(
    readonly config: ResolvedConfig,
    readonly runId: string,
    readonly goal: string,
    readonly signal: AbortSignal,
  ) {
    this.tasks = config.tasks ?? [{ id: 'main', prompt: goal }];
    this.toolSpecChars = [...config.tools.values()].reduce((sum, tool) => sum + JSON.stringify(tool.spec).length, 0);
    this.transcript = new Transcript(this.toolSpecChars);
  }

  get task(): TaskConfig {
    const task = this.tasks[this.taskIndex];
    if (!task) throw new Error(`no task at index ${this.taskIndex}`);
    return task;
  }

  /** Start a fresh conversation for the task at `index` (DESIGN §8: each task is its own bounded loop). */
  beginTask(index: number): void {
    this.taskIndex = index;
    this.pendingCalls = [];
    this.pendingRepeatCounts = [];
    this.transcript = new Transcript(this.toolSpecChars);
    if (this.config.instructions) this.transcript.append({ role: 'system', content: this.config.instructions });
    this.transcript.append({ role: 'user', content: this.taskPrompt() });
  }

  private taskPrompt(): string {
    const task = this.task;
    const prompt = typeof task.prompt === 'function' ? task.prompt({ goal: this.goal, outputs: this.taskOutputs }) : task.prompt;
    if (this.config.tasks === null) return prompt;
    const done = Object.keys(this.taskOutputs).length > 0 ? `\n\nResults of earlier tasks:\n${JSON.stringify(this.taskOutputs)}` : '';
    return `Goal: ${this.goal}${done}\n\nCurrent task (${task.id}): ${prompt}`;
  }

  /** Tools offered to the model: those whose circuit breaker is closed. */
  offeredTools(health: { isOpen(name: string): boolean }): ToolSpec[] {
    const specs: ToolSpec[] = [];
    for (const tool of this.config.tools.values()) if (!health.isOpen(tool.name)) specs.push(tool.spec);
    return specs;
  }

  private traceSinkFailed = false;

  record(event: TraceEvent): void {
    if (this.config.trace.inMemory) this.trace.push(event);
    if (this.traceSinkFailed || this.config.trace.onEvent === undefined) return;
    try {
      this.config.trace.onEvent(event);
    } catch (error) {
      // A broken trace sink must not stop the loop; it is dropped once, with a warning.
      this.traceSinkFailed = true;
      this.warnings.push(`trace.onEvent threw and was disabled for this run: ${error instanceof Error ? error.message : String(error)}`);
    }
  }

  warn(message: string, at: number): void {
    this.warnings.push(message);
    this.record({ type: 'warning', runId: this.runId, at, message });
  }
}
