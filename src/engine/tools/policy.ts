/**
 * Tool permissions: checked for every call, never cached or inherited from an earlier
 * step. `createLoop` copies the policy (and its lists) when it validates the config, so editing the
 * policy object afterwards changes nothing; only `decide`'s own logic, run at each call, can vary.
 */
import { LoopConfigError } from '../../contracts/errors.js';
import type { Tool, ToolAccess } from './define-tool.js';

/**
 * What the policy says about one call.
 * @example
 * const verdict: PolicyVerdict = checkToolPolicy(policy, tool, args); // 'allow' | 'deny' | 'needs_approval'
 */
export type PolicyVerdict = 'allow' | 'deny' | 'needs_approval';

/**
 * Which tool calls may run. Access levels in `allow` run, those in `requireApproval` wait for a person,
 * any other level is denied. `decide` sees each call first and wins when it returns a verdict.
 * @example
 * const policy: ToolPolicy = {
 *   allow: ['read'],
 *   requireApproval: ['write', 'destructive'],
 *   decide: ({ tool, args }) => (tool.name === 'refund' && (args as { amount: number }).amount > 100 ? 'deny' : undefined),
 * };
 */
export interface ToolPolicy {
  /** Defaults to `['read', 'write']`. */
  allow?: readonly ToolAccess[];
  /** Defaults to `['destructive']`. Wins over `allow` when a level is in both. */
  requireApproval?: readonly ToolAccess[];
  /**
   * Per-call hook; return undefined to fall back to the lists. `args` are the schema's parsed output:
   * it is not consulted for calls whose arguments are invalid (those are rejected anyway). `runId`
   * and `callId` identify the call, e.g. for an audit log or a per-tenant rule.
   */
  decide?: (call: { tool: Tool; args: unknown; runId: string; callId: string }) => PolicyVerdict | undefined;
  /**
   * What a denied call does: `stop` (default) ends the run with `permission_denied`; `tell_model`
   * answers the call with the refusal, which the model sees and can work around. Never retried either way.
   */
  onDeny?: 'stop' | 'tell_model';
}

/**
 * Which call the policy is asked about, for `decide`.
 * @example
 * checkToolPolicy(policy, tool, args, { runId: 'run_1', callId: 'call_0' });
 */
export interface PolicyCallIdentity {
  runId: string;
  callId: string;
}

/**
 * The default lists: reads and writes run, destructive tools need approval.
 * @example
 * DEFAULT_TOOL_POLICY.requireApproval // ['destructive']
 */
export const DEFAULT_TOOL_POLICY = Object.freeze({
  allow: Object.freeze(['read', 'write'] as const),
  requireApproval: Object.freeze(['destructive'] as const),
}) satisfies Required<Omit<ToolPolicy, 'decide' | 'onDeny'>>;

const POLICY_VERDICTS: ReadonlySet<unknown> = new Set<PolicyVerdict>(['allow', 'deny', 'needs_approval']);

/**
 * The verdict for one call. A verdict from `decide` wins; otherwise `requireApproval`, then `allow`,
 * and an access level in neither list is denied. Errors thrown by `decide` propagate: a broken policy
 * must not silently allow or deny.
 * @example
 * checkToolPolicy(undefined, deleteUserTool, { id: 'u1' }) // 'needs_approval' (destructive)
 * checkToolPolicy({ allow: ['read'] }, writeTool, {})      // 'deny'
 */
export function checkToolPolicy(
  policy: ToolPolicy | undefined,
  tool: Tool,
  args: unknown,
  identity: PolicyCallIdentity = { runId: '', callId: '' },
): PolicyVerdict {
  const decided = policy?.decide?.({ tool, args, runId: identity.runId, callId: identity.callId });
  if (decided !== undefined) {
    // Fail closed on a hook from untyped code that returns something other than a verdict.
    if (!POLICY_VERDICTS.has(decided)) {
      throw new LoopConfigError({
        issues: [
          {
            path: 'policy.decide',
            message: `returned ${JSON.stringify(decided)}; expected 'allow', 'deny', 'needs_approval' or undefined`,
          },
        ],
      });
    }
    return decided;
  }
  const requireApproval: readonly ToolAccess[] = policy?.requireApproval ?? DEFAULT_TOOL_POLICY.requireApproval;
  if (requireApproval.includes(tool.access)) return 'needs_approval';
  const allow: readonly ToolAccess[] = policy?.allow ?? DEFAULT_TOOL_POLICY.allow;
  return allow.includes(tool.access) ? 'allow' : 'deny';
}
