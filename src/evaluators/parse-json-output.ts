/**
 * JSON parsing shared by the format evaluators and the judge. Real models often wrap JSON in a
 * Markdown code fence, so a single ```json (or bare ```) block around the whole text is unwrapped.
 */

/**
 * The outcome of parsing a model's text as JSON; `error` is readable enough to feed back to the model.
 * @example
 * const outcome: JsonParseOutcome = { ok: false, error: 'Unexpected end of JSON input' };
 */
export type JsonParseOutcome = { ok: true; value: unknown } | { ok: false; error: string };

// Language tag, optional newline, body, closing fence; the whole (trimmed) text must be the block.
const FENCED_BLOCK = /^```([A-Za-z]*)[ \t]*(?:\r?\n)?([\s\S]*?)\r?\n?[ \t]*```$/;

/**
 * Returns the body of a single ```json or bare ``` block that spans the whole text, or the text
 * unchanged when it is not exactly one such block.
 * @example
 * unwrapJsonFence('```json\n{"a":1}\n```') // '{"a":1}'
 */
export function unwrapJsonFence(text: string): string {
  const trimmed = text.trim();
  const match = FENCED_BLOCK.exec(trimmed);
  if (!match) return text;
  const [, language = '', body = ''] = match;
  const isJsonTag = language === '' || language.toLowerCase() === 'json';
  // A fence inside the body means several blocks (or prose between them): not ours to guess.
  if (!isJsonTag || body.includes('```')) return text;
  return body;
}

/**
 * Parses a model's text as JSON, tolerating one surrounding code fence.
 * @example
 * parseJsonOutput('```json\n{"total": 3}\n```') // { ok: true, value: { total: 3 } }
 */
export function parseJsonOutput(text: string): JsonParseOutcome {
  try {
    return { ok: true, value: JSON.parse(unwrapJsonFence(text)) as unknown };
  } catch (error) {
    return { ok: false, error: error instanceof Error ? error.message : String(error) };
  }
}

/**
 * A readable name for a JSON value's type, for failure reasons (`null` and `array` are named apart from `object`).
 * @example
 * describeJsonType([1, 2]) // 'array'
 */
export function describeJsonType(value: unknown): string {
  if (value === null) return 'null';
  if (Array.isArray(value)) return 'array';
  return typeof value;
}
