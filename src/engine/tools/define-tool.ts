/**
 * Tool definitions: a zod input schema, a description, an access level, a timeout and
 * whether the side effect is idempotent. `defineTool` validates the definition before anything runs
 * and resolves it into the type-erased `Tool` the runtime uses.
 */
import { z } from 'zod';
import { DEFAULT_TOOL_TIMEOUT_MS } from '../constants.js';
import { LoopConfigError, type ConfigIssue } from '../../contracts/errors.js';
import type { ToolSpec } from '../../contracts/model.js';

/**
 * How much a tool can change the world; the policy decides per access level (destructive needs approval by default).
 * @example
 * const access: ToolAccess = 'write';
 */
export type ToolAccess = 'read' | 'write' | 'destructive';

/** Every access level, least to most dangerous. */
export const TOOL_ACCESS_LEVELS: readonly ToolAccess[] = ['read', 'write', 'destructive'];

/**
 * What a tool receives besides its arguments.
 * @example
 * execute: async ({ order_id }, { signal, idempotencyKey }) => api.refund(order_id, { signal, idempotencyKey })
 */
export interface ToolContext {
  /** Aborted on the tool's timeout, on cancel and on the run deadline. */
  signal: AbortSignal;
  /** `${runId}:${stepId}:${callId}`: stable across a crash and resume, so a side effect can be deduplicated. */
  idempotencyKey: string;
  runId: string;
  callId: string;
}

/**
 * The key a side-effecting call is journalled and looked up by: `runId:stepId:callId`.
 * @example
 * idempotencyKey('run_1', '3', 'call_0') // 'run_1:3:call_0'
 */
export function idempotencyKey(runId: string, stepId: string, callId: string): string {
  return `${runId}:${stepId}:${callId}`;
}

/**
 * Answer of `checkOutcome`: did the call with this idempotency key take effect?
 * @example
 * checkOutcome: async (_args, { idempotencyKey }) => {
 *   const refund = await api.findRefund(idempotencyKey);
 *   return refund ? { status: 'done', result: refund } : { status: 'not_done' };
 * }
 */
export type OutcomeLookup = { status: 'done'; result: unknown } | { status: 'not_done' } | { status: 'unknown' };

/**
 * A tool as its author writes it; pass it to `defineTool`.
 * @example
 * const definition: ToolDefinition<typeof input> = { name: 'get_order', description: 'Look up an order', input, access: 'read', execute: ({ id }) => orders.get(id) };
 */
export interface ToolDefinition<Schema extends z.ZodType> {
  /** 1–64 characters of `[a-zA-Z0-9_-]`, the limit most providers enforce. */
  name: string;
  /** Shown to the model; say when to use the tool. */
  description: string;
  /** Validates the model's arguments; its JSON Schema is what the model sees. */
  input: Schema;
  access: ToolAccess;
  /** Per-call timeout; defaults to `DEFAULT_TOOL_TIMEOUT_MS`. */
  timeoutMs?: number;
  /** Whether running the call twice is harmless. Defaults to true for `read`, false otherwise. */
  idempotent?: boolean;
  execute(args: z.output<Schema>, context: ToolContext): unknown | Promise<unknown>;
  /** Looks up by `context.idempotencyKey` whether a call whose outcome is unknown (it timed out) took effect. */
  checkOutcome?(args: z.output<Schema>, context: ToolContext): OutcomeLookup | Promise<OutcomeLookup>;
  /**
   * Secret values the tool holds (a token it sends, a password in its connection string): a loop with the
   * tool redacts each of them wherever it appears in the trace and its sinks, warnings, stop details and
   * errors. The transcript (`result.messages`) keeps what the tool returned: scrub its results yourself.
   */
  secrets?: readonly string[];
}

/**
 * A validated tool with its defaults resolved and its JSON Schema computed once.
 * @example
 * const tool: Tool = defineTool({ name: 'ping', description: 'Ping', input: z.object({}), access: 'read', execute: () => 'pong' });
 * tool.spec.parameters // { type: 'object', properties: {} }
 */
export interface Tool {
  readonly name: string;
  readonly description: string;
  readonly input: z.ZodType;
  readonly access: ToolAccess;
  readonly timeoutMs: number;
  readonly idempotent: boolean;
  execute(args: unknown, context: ToolContext): unknown | Promise<unknown>;
  checkOutcome?(args: unknown, context: ToolContext): OutcomeLookup | Promise<OutcomeLookup>;
  /** Secret values the loop redacts from everything it reports; empty for most tools. */
  readonly secrets?: readonly string[];
  /** What the model is offered: name, description and the input's JSON Schema (without `$schema`). */
  readonly spec: ToolSpec;
}

const MAX_TIMER_MS = 2_147_483_647;

const isFunction = (value: unknown): boolean => typeof value === 'function';

const toolDefinitionSchema = z.object({
  name: z.string().regex(/^[a-zA-Z0-9_-]{1,64}$/, 'must be 1-64 characters of letters, digits, "_" or "-"'),
  description: z.string().trim().min(1, 'must not be empty'),
  input: z.custom<z.ZodType>((value) => value instanceof z.ZodType, 'must be a zod 4 schema, e.g. z.object({...})'),
  access: z.enum(TOOL_ACCESS_LEVELS as [ToolAccess, ...ToolAccess[]]),
  // Node fires longer timers at once (with a warning), which would time every call out.
  timeoutMs: z
    .number()
    .int()
    .positive()
    .max(MAX_TIMER_MS, `must be at most ${MAX_TIMER_MS} (the longest timer Node supports)`)
    .optional(),
  idempotent: z.boolean().optional(),
  execute: z.custom<unknown>(isFunction, 'must be a function'),
  checkOutcome: z.custom<unknown>(isFunction, 'must be a function').optional(),
  secrets: z.array(z.string()).readonly().optional(),
});

/** The JSON Schema the model sees: of the schema's input side, since the model writes the input (defaults stay optional). */
function toParameters(input: z.ZodType): { parameters: Record<string, unknown> } | { issue: ConfigIssue } {
  let jsonSchema: Record<string, unknown>;
  try {
    jsonSchema = z.toJSONSchema(input, { io: 'input' }) as Record<string, unknown>;
  } catch (error) {
    return { issue: { path: 'input', message: `cannot be represented as JSON Schema: ${(error as Error).message}` } };
  }
  // Providers send tool arguments as one JSON object, so the root must describe an object.
  if (jsonSchema.type !== 'object') {
    return {
      issue: {
        path: 'input',
        message: 'must describe an object, e.g. z.object({...}), because tool arguments are a JSON object',
      },
    };
  }
  const { $schema: _dialect, ...parameters } = jsonSchema;
  return { parameters };
}

/**
 * Validates a tool definition and resolves it for the runtime. Throws `LoopConfigError` naming every
 * bad field (`name`, `description`, `input`, `access`, `timeoutMs`, ...) before anything runs.
 * @example
 * const getOrderStatus = defineTool({
 *   name: 'get_order_status',
 *   description: 'Look up the status of an order by its id',
 *   input: z.object({ order_id: z.string().regex(/^O-\d+$/) }),
 *   access: 'read',
 *   execute: async ({ order_id }, { signal }) => orders.status(order_id, { signal }),
 * });
 */
export function defineTool<Schema extends z.ZodType>(definition: ToolDefinition<Schema>): Tool {
  const checked = toolDefinitionSchema.safeParse(definition);
  if (!checked.success) {
    throw new LoopConfigError({
      // Not zodIssuePath: a ConfigIssue keeps '' for the root, as config.ts writes it, and LoopConfigError prints it as (root).
      issues: checked.error.issues.map((issue) => ({ path: z.core.toDotPath(issue.path), message: issue.message })),
      cause: checked.error,
    });
  }
  const schema = toParameters(definition.input);
  if ('issue' in schema) throw new LoopConfigError({ issues: [schema.issue] });

  const { name, description, input, access, timeoutMs, idempotent, execute, checkOutcome, secrets } = definition;
  // Typed arguments are guaranteed by the runtime, which only calls these with the schema's parsed output.
  type ErasedExecute = Tool['execute'];
  type ErasedCheckOutcome = NonNullable<Tool['checkOutcome']>;
  return Object.freeze({
    name,
    description,
    input,
    access,
    timeoutMs: timeoutMs ?? DEFAULT_TOOL_TIMEOUT_MS,
    idempotent: idempotent ?? access === 'read',
    execute: execute.bind(definition) as ErasedExecute,
    ...(checkOutcome ? { checkOutcome: checkOutcome.bind(definition) as ErasedCheckOutcome } : {}),
    ...(secrets && secrets.length > 0 ? { secrets: Object.freeze([...secrets]) } : {}),
    spec: Object.freeze({ name, description, parameters: schema.parameters }),
  });
}
