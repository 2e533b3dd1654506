/**
 * A pure text function remembered for short inputs. Redaction runs on every string of every trace event, and
 * most of them are the same few words on every step and every run (a task id, a tool or model name, a state):
 * looking them up costs far less than running the rules again. Long texts (replies, tool results, summaries)
 * are rarely seen twice, so they are never kept; the table is emptied when full, so it stays small.
 */

/** Longer inputs are passed straight through: a tool result or a reply is rarely redacted twice. */
export const MAX_MEMO_TEXT_CHARS = 128;
/** Entries kept before the table starts again (ids that never recur must not grow it for good). */
export const MAX_MEMO_TEXTS = 1024;

/**
 * `transform`, remembered for inputs of at most `MAX_MEMO_TEXT_CHARS`; `transform` must be pure (the same
 * output for the same input, every time).
 * @example
 * const text = memoiseText((input) => input.replace(/sk-[a-z0-9]+/g, '[redacted]'));
 * text('main'); // computed once, then looked up
 */
export function memoiseText(transform: (input: string) => string): (input: string) => string {
  const known = new Map<string, string>();
  return (input) => {
    if (input.length > MAX_MEMO_TEXT_CHARS) return transform(input);
    let output = known.get(input);
    if (output === undefined) {
      output = transform(input);
      if (known.size >= MAX_MEMO_TEXTS) known.clear();
      known.set(input, output);
    }
    return output;
  };
}
