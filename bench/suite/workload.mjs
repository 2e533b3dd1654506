/**
 * The one workload every adapter runs: an instant fake model that asks for `steps - 1` `lookup`
 * calls, one per reply and each with fresh arguments, then gives the final answer; a `lookup` tool
 * that returns a small string. The model is stateless: it reads the key number from the last tool
 * result in the request it is given, so one model serves any number of concurrent runs, and the
 * counters below are checked against `runs × steps` model calls and `runs × (steps - 1)` tool calls.
 */
export const FINAL_ANSWER_TEXT = '{"done":true}';
export const TOOL_NAME = 'lookup';
export const TOOL_DESCRIPTION = 'Look a key up.';
export const USER_GOAL = 'go';
export const USAGE = Object.freeze({ inputTokens: 50, outputTokens: 10 });

export const counters = { modelCalls: 0, toolCalls: 0 };
/** Set by the concurrency measurement to sample the heap while runs are in flight. */
export const hooks = { onModelCall: null };

export function resetCounters() {
  counters.modelCalls = 0;
  counters.toolCalls = 0;
}

/** The tool body shared by every adapter. */
export function lookupValue(key) {
  counters.toolCalls++;
  return `value of ${key}`;
}

const KEY_PATTERN = /value of k(\d+)/;

/**
 * The model's decision from the text of the last message of its request (the latest tool result,
 * or the user's goal on the first call): the next tool call, or null for the final answer.
 */
export function decide(lastMessageText, steps) {
  counters.modelCalls++;
  if (hooks.onModelCall !== null) hooks.onModelCall();
  const match = typeof lastMessageText === 'string' ? KEY_PATTERN.exec(lastMessageText) : null;
  const step = (match ? Number(match[1]) : 0) + 1;
  if (step < steps) return { callId: `call_${step}`, key: `k${step}`, arguments: `{"key":"k${step}"}` };
  return null;
}

/** Model latency: nothing at all for the instant model (no timer, no extra tick). */
export function sleep(milliseconds) {
  return new Promise((resolve) => setTimeout(resolve, milliseconds));
}

/** Fails the run when the framework made a different number of model or tool calls than the workload asks for. */
export function checkCounts(runs, steps, where) {
  const expectedModel = runs * steps;
  const expectedTools = runs * (steps - 1);
  if (counters.modelCalls !== expectedModel || counters.toolCalls !== expectedTools) {
    throw new Error(
      `${where}: expected ${expectedModel} model calls and ${expectedTools} tool calls for ${runs} runs of ${steps} steps, ` +
        `counted ${counters.modelCalls} and ${counters.toolCalls}`,
    );
  }
}

/** Every adapter's `run()` resolves to the parsed final answer; anything else fails the run. */
export function checkAnswer(answer, where) {
  if (answer === null || typeof answer !== 'object' || answer.done !== true || Object.keys(answer).length !== 1) {
    throw new Error(`${where}: unexpected final answer ${JSON.stringify(answer)}`);
  }
}
