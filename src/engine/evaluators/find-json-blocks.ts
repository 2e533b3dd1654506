/**
 * Locating JSON inside prose: Markdown fences and balanced bracket blocks. String-aware, so a
 * brace inside a JSON string never closes a block.
 */

// An opening fence at a line start with an optional language tag, the body, a closing fence.
const FENCE = /(^|\n)[ \t]*```([A-Za-z]*)[^\n]*\n([\s\S]*?)\n?[ \t]*```/g;

/**
 * The bodies of the ```json and bare ``` fences in the text, in order (other languages are skipped).
 * @example
 * findJsonFences('Result:\n```json\n{"a":1}\n```') // ['{"a":1}']
 */
export function findJsonFences(text: string): string[] {
  const bodies: string[] = [];
  for (const match of text.matchAll(FENCE)) {
    const language = match[2] ?? '';
    if (language === '' || language.toLowerCase() === 'json') bodies.push(match[3] ?? '');
  }
  return bodies;
}

/**
 * The text with every fenced code block (any language) blanked out, positions kept: code in a
 * fence is not an answer.
 * @example
 * withoutFences('a\n```py\nx = {}\n```\nb').replace(/\s+/g, ' ') // 'a b'
 */
export function withoutFences(text: string): string {
  return text.replace(FENCE, (match, lineStart: string) => lineStart + ' '.repeat(match.length - lineStart.length));
}

/**
 * A balanced block found in prose, with its source text and parsed value.
 * @example
 * const block: JsonBlock = { start: 10, text: '{"a":1}', value: { a: 1 } };
 */
export interface JsonBlock {
  start: number;
  text: string;
  value: unknown;
}

const isOpening = (char: string) => char === '{' || char === '[';
// Prose with many stray brackets would make the scan quadratic; past this many starts we stop looking.
const MAX_BLOCK_STARTS = 200;

/** The end (exclusive) of the balanced block opening at `start`, or -1 when it never balances. */
function balancedEnd(text: string, start: number): number {
  const expected: string[] = [];
  let inString = false;
  for (let index = start; index < text.length; index++) {
    const char = text[index] ?? '';
    if (inString) {
      if (char === '\\') index++;
      else if (char === '"') inString = false;
      continue;
    }
    if (char === '"') inString = true;
    else if (isOpening(char)) expected.push(char === '{' ? '}' : ']');
    else if (char === '}' || char === ']') {
      if (expected.pop() !== char) return -1;
      if (expected.length === 0) return index + 1;
    }
  }
  return -1;
}

/**
 * The balanced `{...}` / `[...]` blocks of the text that parse as JSON, outermost first and never
 * nested in one another. A balanced block that does not parse (prose like `{see below}`) is
 * searched inside for blocks that do.
 * @example
 * findJsonBlocks('Total: {"total": 3}. Thanks') // [{ start: 7, text: '{"total": 3}', value: { total: 3 } }]
 */
export function findJsonBlocks(text: string): JsonBlock[] {
  const blocks: JsonBlock[] = [];
  let starts = 0;
  for (let index = 0; index < text.length && starts < MAX_BLOCK_STARTS; index++) {
    if (!isOpening(text[index] ?? '')) continue;
    starts++;
    const end = balancedEnd(text, index);
    if (end === -1) continue;
    const candidate = text.slice(index, end);
    try {
      blocks.push({ start: index, text: candidate, value: JSON.parse(candidate) as unknown });
      index = end - 1;
    } catch {
      // Not JSON: look inside it from the next character.
    }
  }
  return blocks;
}
