/**
 * JSON parsing shared by the format evaluators and the judge. Real models wrap JSON in a Markdown
 * code fence and put prose around it, so the JSON is looked for by a few strict rules (see
 * `parseJsonOutput`) that never pick one of two different answers.
 */
import { findJsonBlocks, findJsonFences, withoutFences } from './find-json-blocks.js';

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

function parse(text: string): JsonParseOutcome {
  try {
    return { ok: true, value: JSON.parse(text) as unknown };
  } catch (error) {
    return { ok: false, error: error instanceof Error ? error.message : String(error) };
  }
}

const PREVIEW_CHARS = 40;
const preview = (text: string) =>
  JSON.stringify(text.length > PREVIEW_CHARS ? `${text.slice(0, PREVIEW_CHARS)}…` : text);

/**
 * Parses a model's text as JSON. The first rule that applies decides, so a reply never yields a
 * value picked from two candidates:
 * 1. the whole text (trimmed) is JSON, or exactly one ```json / bare ``` fence spanning it;
 * 2. else, when the text holds ```json or bare ``` fences, there must be exactly one and its body
 *    must parse (prose around it is ignored; two fences fail, naming the count);
 * 3. else, the text outside code fences of other languages must hold exactly one balanced
 *    top-level `{...}` or `[...]` block that parses (brackets inside JSON strings are skipped; prose braces that do not parse are ignored; two
 *    parsing blocks fail, naming both).
 * When nothing applies, the error is `JSON.parse`'s message for the whole text.
 * @example
 * parseJsonOutput('Here is the result:\n```json\n{"total": 3}\n```\nLet me know') // { ok: true, value: { total: 3 } }
 */
export function parseJsonOutput(text: string): JsonParseOutcome {
  const whole = parse(unwrapJsonFence(text));
  if (whole.ok) return whole;
  const fences = findJsonFences(text);
  if (fences.length > 1) return { ok: false, error: `found ${fences.length} fenced JSON blocks; expected exactly one` };
  const [fence] = fences;
  if (fence !== undefined) return parse(fence);
  const blocks = findJsonBlocks(withoutFences(text));
  if (blocks.length > 1) {
    return {
      ok: false,
      error: `found ${blocks.length} JSON values in the text (${blocks.map((block) => preview(block.text)).join(', ')}); expected exactly one`,
    };
  }
  const [block] = blocks;
  return block !== undefined ? { ok: true, value: block.value } : whole;
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
