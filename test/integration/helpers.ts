/**
 * Shared helpers of the full-loop integration tests: every loop runs on a virtual clock with a
 * fixed jitter source, so backoffs and deadlines are exact and nothing really sleeps.
 */
import { vi } from 'vitest';
import { z } from 'zod';
import {
  createLoop,
  defineTool,
  type Loop,
  type LoopConfig,
  type Message,
  type Tool,
  type ToolAccess,
} from 'loopstate';
import { virtualClock, type ScriptedModel, type VirtualClock } from 'loopstate/testing';

export interface TestLoop {
  loop: Loop;
  clock: VirtualClock;
}

/** `createLoop` with a virtual clock, `random: () => 0.5` and a fixed run id; the config may override any of them. */
export function createTestLoop(config: LoopConfig, clock: VirtualClock = virtualClock()): TestLoop {
  const loop = createLoop({ random: () => 0.5, generateRunId: () => 'run-test', clock, ...config });
  return { loop, clock };
}

/** What the model received on its `index`-th call (0-based). */
export function requestAt(model: ScriptedModel, index: number): readonly Message[] {
  const request = model.calls[index];
  if (request === undefined) throw new Error(`the model was called ${model.calls.length} times; no call ${index}`);
  return request.messages;
}

/** The text of a message, whatever its role (tool calls of an assistant message are left out). */
export function contentOf(message: Message | undefined): string {
  return message?.content ?? '';
}

/** Every message content of a request, joined: for "did this text reach the model" checks. */
export function transcriptText(messages: readonly Message[]): string {
  return messages.map(contentOf).join('\n');
}

/** The contents of the messages with the given role, in order. */
export function contentsWithRole(messages: readonly Message[], role: Message['role']): string[] {
  return messages.filter((message) => message.role === role).map(contentOf);
}

/** A tool that records every execution's arguments; `respond` computes its result. */
export function recordingTool(options: {
  name?: string;
  access?: ToolAccess;
  idempotent?: boolean;
  timeoutMs?: number;
  input?: z.ZodType;
  respond?: (args: Record<string, unknown>) => unknown;
  checkOutcome?: Tool['checkOutcome'];
}): { tool: Tool; executions: Record<string, unknown>[] } {
  const executions: Record<string, unknown>[] = [];
  const respond = options.respond ?? ((args: Record<string, unknown>) => ({ found: true, ...args }));
  const tool = defineTool({
    name: options.name ?? 'lookup',
    description: 'Looks a record up by id',
    input: options.input ?? z.object({ id: z.string() }),
    access: options.access ?? 'read',
    ...(options.idempotent === undefined ? {} : { idempotent: options.idempotent }),
    ...(options.timeoutMs === undefined ? {} : { timeoutMs: options.timeoutMs }),
    ...(options.checkOutcome === undefined ? {} : { checkOutcome: options.checkOutcome }),
    execute: (args: unknown) => {
      const record = args as Record<string, unknown>;
      executions.push(record);
      return respond(record);
    },
  });
  return { tool, executions };
}

/**
 * Fakes the host's `setTimeout` for tests that need a tool timeout. Tool timeouts run on the run's
 * injected clock; faking the host timers as well means a timeout set there would still fire instead
 * of stalling the test. Fire both from inside the tool with `hangPastTimeout`.
 */
export function useFakeHostTimers(): void {
  vi.useFakeTimers({ toFake: ['setTimeout', 'clearTimeout'] });
}

/**
 * Called from a tool's `execute`: moves both the host timers and the run's clock past the tool's
 * timeout (so it fires whichever one the runtime uses), then never settles.
 */
export function hangPastTimeout(clock: VirtualClock, timeoutMs: number): Promise<never> {
  vi.advanceTimersByTime(timeoutMs);
  clock.advance(timeoutMs);
  return new Promise<never>(() => {});
}
