/**
 * Issue 18's durable workload, shared by the benches that measure it (durable-cost, journal-floor, record-bytes,
 * resume-fixed-cost): an instant model that asks for one `lookup` call a step for S − 1 steps, then answers, and
 * limits that never stop the run early. Each bench builds its loop from these with the build it measures.
 */
import { z } from 'zod';
import type * as Loopstate from 'loopstate';
import type { Message, Model } from 'loopstate';

/**
 * Which call this is, from the last assistant message's call id (`c<n>`): constant time, where counting every
 * assistant message made the storeless baseline itself grow with S (S² over a run) and flattered the ratios.
 * A resumed run's model is a new object, so the number cannot be a counter.
 */
export function callNumber(messages: readonly Message[]): number {
  for (let index = messages.length - 1; index >= 0; index -= 1) {
    const message = messages[index];
    if (message?.role !== 'assistant') continue;
    const id = message.toolCalls?.[0]?.id;
    if (id === undefined || !/^c\d+$/.test(id)) throw new Error(`unexpected assistant message in the bench: ${id}`);
    return Number(id.slice(1)) + 1;
  }
  return 1;
}

export interface WorkloadModelOptions {
  /** This call never answers (a run left hanging, to be resumed). */
  hangAt?: number | null;
  /** Told of every call, before it answers (or hangs). */
  onCall?: (call: number) => void;
}

/** Instant replies: a tool call on each of the first `total` − 1 calls, then the answer. */
export function workloadModel(total: number, { hangAt = null, onCall }: WorkloadModelOptions = {}): Model {
  return {
    id: 'scripted',
    generate(request) {
      const call = callNumber(request.messages);
      onCall?.(call);
      const usage = { inputTokens: 50, outputTokens: 10 };
      if (call === hangAt) return new Promise(() => undefined);
      if (call < total)
        return Promise.resolve({
          text: null,
          toolCalls: [{ id: `c${call}`, name: 'lookup', arguments: `{"key":"k${call}"}` }],
          usage,
        });
      return Promise.resolve({ text: '{"done":true}', toolCalls: [], usage });
    },
  };
}

/** The workload's one tool, made with the `defineTool` of the build measured. */
export const lookupTool = (defineTool: typeof Loopstate.defineTool) =>
  defineTool({
    name: 'lookup',
    description: 'Look a key up.',
    input: z.object({ key: z.string() }),
    access: 'read',
    execute: ({ key }) => `value ${key}`,
  });

/** Limits that let a run of `total` steps end by itself; no-progress detection that never stops it early. */
export const workloadLimits = (total: number) => ({
  limits: {
    maxSteps: total + 1,
    maxToolCalls: total,
    deadlineMs: Infinity,
    maxInputTokens: Infinity,
    maxOutputTokens: Infinity,
    maxCostUsd: Infinity,
  },
  noProgress: { unchangedState: 1_000_000 },
});
