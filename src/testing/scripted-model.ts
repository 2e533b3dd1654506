/**
 * A deterministic `Model` for tests and the offline default: one scripted step per
 * call, a clear error when the script runs out, `assertComplete()` for unused steps, and every
 * request recorded in `calls`.
 */
import { ModelCallError } from '../contracts/errors.js';
import { ScriptExhaustedError } from './script-exhausted-error.js';
import type { Message, Model, ModelRequest, ModelResponse, ModelServer, ModelSettings } from '../contracts/model.js';
import { invalidScript, type ScriptStep, type ScriptStepResult } from './script-steps.js';
import { untilAborted } from '../engine/runtime/interruption.js';

/**
 * The scripted model: a `Model` plus what a test inspects afterwards.
 * @example
 * const model: ScriptedModel = scriptedModel([reply('done')]);
 */
export interface ScriptedModel extends Model {
  /** Every request that reached the script, in order; `messages` is a copy taken at call time. */
  readonly calls: readonly ModelRequest[];
  /** Steps not played yet. */
  readonly remaining: number;
  /** Throws `ScriptExhaustedError` listing the unused steps when any are left. */
  assertComplete(): void;
}

/**
 * Options of `scriptedModel`.
 * @example
 * const options: ScriptedModelOptions = { id: 'gpt-4.1-mini' }; // price the run like that model
 */
export interface ScriptedModelOptions {
  /** Model id for pricing and traces; defaults to `scripted`. */
  id?: string;
  /** The provider to report (`gen_ai.provider.name`), e.g. to test spans as a real adapter would make them; none by default. */
  provider?: string;
  /** The server to report (`server.address`, `server.port`); none by default. */
  server?: ModelServer;
  /** Settings to report as the model's own (`gen_ai.request.*`); the script ignores them. */
  settings?: ModelSettings;
}

const PREVIEW_CHARS = 120;

/**
 * Builds a model that answers each `generate` call with the next step of the script. A request
 * whose signal is already aborted is refused with the signal's reason before it reaches the
 * script; a promise-returning step is abandoned the same way if the signal aborts meanwhile.
 * @example
 * const model = scriptedModel([toolCall('get_order_status', { order_id: 'O-101' }), reply('Shipped.')]);
 * await loop.run({ goal: 'Where is O-101?' });
 * model.assertComplete();
 * expect(model.calls[1]?.messages.at(-1)).toMatchObject({ role: 'tool' });
 */
export function scriptedModel(steps: readonly ScriptStep[], options: ScriptedModelOptions = {}): ScriptedModel {
  const script = [...steps];
  const calls: ModelRequest[] = [];
  const consumed = (): number => Math.min(calls.length, script.length);

  async function generate(request: ModelRequest): Promise<ModelResponse> {
    request.signal.throwIfAborted();
    const stepIndex = calls.length;
    // The driver keeps appending to its transcript, so keep what this call actually saw.
    calls.push({ ...request, messages: [...request.messages], tools: [...request.tools] });
    const step = script[stepIndex];
    if (step === undefined) {
      throw new ScriptExhaustedError(
        `scripted model called ${stepIndex + 1} times but the script has ${script.length} steps; ` +
          `the last request ended with: ${describeMessage(request.messages.at(-1))}`,
      );
    }
    // A dynamic step is abandoned when the call is aborted, as a real provider call would be.
    const result =
      typeof step === 'function'
        ? await untilAborted(
            Promise.resolve().then(() => step(request)),
            request.signal,
          )
        : step;
    return play(result, stepIndex);
  }

  return {
    id: options.id ?? 'scripted',
    ...(options.provider === undefined ? {} : { provider: options.provider }),
    ...(options.server === undefined ? {} : { server: { ...options.server } }),
    ...(options.settings === undefined ? {} : { settings: { ...options.settings } }),
    generate,
    calls,
    get remaining() {
      return script.length - consumed();
    },
    assertComplete() {
      const unused = script.slice(consumed());
      if (unused.length === 0) return;
      const offset = consumed();
      const listed = unused.map((step, index) => `  step ${offset + index}: ${describeStep(step)}`).join('\n');
      throw new ScriptExhaustedError(
        `scripted model has ${unused.length} unused step(s) of ${script.length} (called ${calls.length} times):\n${listed}`,
      );
    },
  };
}

function play(result: ScriptStepResult, stepIndex: number): ModelResponse {
  if (typeof result !== 'object' || result === null || (result.type !== 'response' && result.type !== 'error')) {
    throw invalidScript(
      `step ${stepIndex} produced ${String(result)}; return reply(), toolCall(), modelError() or emptyReply()`,
    );
  }
  if (result.type === 'error') {
    throw new ModelCallError({
      kind: result.kind,
      message: result.message,
      ...(result.status === undefined ? {} : { status: result.status }),
      ...(result.retryAfterMs === undefined ? {} : { retryAfterMs: result.retryAfterMs }),
    });
  }
  // Fresh objects per call: the driver may keep or mutate what it receives.
  return {
    text: result.text,
    toolCalls: result.toolCalls.map((call, index) => ({
      id: call.id ?? `call_${stepIndex}_${index}`,
      name: call.name,
      arguments: call.arguments,
    })),
    usage: { ...result.usage },
    ...(result.metadata === undefined ? {} : { metadata: { ...result.metadata } }),
  };
}

function preview(text: string): string {
  const quoted = JSON.stringify(text);
  return quoted.length <= PREVIEW_CHARS ? quoted : `${quoted.slice(0, PREVIEW_CHARS)}…`;
}

function describeMessage(message: Message | undefined): string {
  if (message === undefined) return '(no messages)';
  switch (message.role) {
    case 'tool':
      return `tool result for ${message.toolCallId}: ${preview(message.content)}`;
    case 'assistant': {
      const calls = (message.toolCalls ?? []).map((call) => `${call.name}(${call.arguments})`).join(', ');
      return `assistant ${calls === '' ? preview(message.content ?? '') : `tool calls ${preview(calls)}`}`;
    }
    default:
      return `${message.role} ${preview(message.content)}`;
  }
}

function describeStep(step: ScriptStep): string {
  if (typeof step === 'function') return 'dynamic step (function)';
  if (step.type === 'error')
    return `modelError(${step.kind}${step.status === undefined ? '' : `, HTTP ${step.status}`})`;
  if (step.toolCalls.length > 0)
    return `toolCall(${preview(step.toolCalls.map((call) => `${call.name}(${call.arguments})`).join(', '))})`;
  return step.text === null ? 'emptyReply()' : `reply(${preview(step.text)})`;
}
