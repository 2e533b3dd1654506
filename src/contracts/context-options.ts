/** How a request is fitted to the model's context window: the options and their resolved form. */
/**
 * How room is made when a request would exceed the ceiling: `trim` drops older tool results and
 * turns; `summarize` condenses the older turns with one call of the loop's model.
 * @example
 * const strategy: ContextStrategy = 'summarize';
 */
export type ContextStrategy = 'trim' | 'summarize';

/**
 * The `context` option of `createLoop`. Every field may be left out (or `undefined`) for its default.
 * @example
 * createLoop({ model, tools, context: { maxInputTokensPerCall: 16_000, strategy: 'trim', keepTurns: 4 } });
 */
export interface ContextOptions {
  /**
   * Estimated input tokens one request may carry. Defaults to the model's `contextWindowTokens`
   * when its adapter reports one, otherwise no ceiling; `Infinity` turns it off explicitly.
   */
  maxInputTokensPerCall?: number;
  /** `trim` (default) or `summarize`; a summary the budgets cannot pay for falls back to `trim` with a warning. */
  strategy?: ContextStrategy;
  /** The last this-many model turns stay whole while older ones can make room (default 4). */
  keepTurns?: number;
}

/**
 * `ContextOptions` with every default filled in.
 * @example
 * const resolved: ResolvedContextOptions = { maxInputTokensPerCall: Infinity, strategy: 'trim', keepTurns: 4 };
 */
export interface ResolvedContextOptions {
  maxInputTokensPerCall: number;
  strategy: ContextStrategy;
  keepTurns: number;
}
