/**
 * Every `code` a loopstate error carries, in one closed list: callers switch on it, so a code is added
 * here (and on the errors reference page) or the type-check refuses the error that uses it.
 */

/**
 * Every error code, grouped by where the error comes from (the order of the errors reference page).
 * @example
 * const retryable = LOOPSTATE_ERROR_CODES.filter((code) => code === 'run_busy' || code === 'store_conflict');
 */
export const LOOPSTATE_ERROR_CODES = [
  // Configuration and run input.
  'invalid_config',
  'invalid_run_id',
  'clock_failed',
  'no_store',
  'missing_dependency',
  // Model calls: `model_<kind>` of a ModelCallError.
  'model_rate_limited',
  'model_server',
  'model_timeout',
  'model_connection',
  'model_bad_request',
  'model_auth',
  'model_refused',
  'model_unknown',
  'context_overflow',
  // Evaluators.
  'judge_invalid_verdict',
  'judge_failed',
  'evaluator_timeout',
  // Tools.
  'tool_call_failed',
  'unknown_outcome',
  // Durable runs and stores.
  'corrupt_record',
  'unsupported_record_version',
  'invalid_snapshot',
  'store_conflict',
  'store_cannot_list',
  'run_not_found',
  'run_exists',
  'run_busy',
  'definition_changed',
  'approval_unknown_call',
  'approval_already_decided',
  'approval_expired',
  'approval_arguments_changed',
  'approvals_incomplete',
  'run_not_waiting',
  'review_not_pending',
  'review_already_decided',
  'review_output_changed',
  // Distributed workers (loopstate/dbos).
  'no_live_worker',
  'worker_version_mismatch',
  // Traces.
  'invalid_trace_line',
  'invalid_trace',
  // MCP servers (loopstate/mcp).
  'mcp_connection_failed',
  // Cassettes (loopstate/cassette).
  'cassette_not_found',
  'cassette_unreadable',
  'cassette_corrupt',
  'cassette_version_unsupported',
  'cassette_write_failed',
  'cassette_locked',
  'cassette_mismatch',
  'cassette_unused_calls',
  // Test doubles (loopstate/testing).
  'script_exhausted',
  'invalid_script',
  'store_contract_violated',
  // The CLI: `cli_<kind>` of a CliError.
  'cli_usage',
  'cli_loop_file',
  'cli_model_setup',
] as const;

/**
 * The stable `code` of every error loopstate throws or reports (`result.error.code`): a closed union,
 * so a `switch` over it is checked for exhaustiveness.
 * @example
 * function advice(code: LoopstateErrorCode): string { return code === 'run_busy' ? 'try again later' : 'see the errors reference' }
 */
export type LoopstateErrorCode = (typeof LOOPSTATE_ERROR_CODES)[number];

const KNOWN_CODES: ReadonlySet<string> = new Set(LOOPSTATE_ERROR_CODES);

/**
 * True when `value` is one of loopstate's error codes: for a code read back from JSON (a CLI's `--json`
 * output, a result stored elsewhere) before it is switched on.
 * @example
 * if (isLoopstateErrorCode(parsed.error?.code)) handle(parsed.error.code);
 */
export function isLoopstateErrorCode(value: unknown): value is LoopstateErrorCode {
  return typeof value === 'string' && KNOWN_CODES.has(value);
}
