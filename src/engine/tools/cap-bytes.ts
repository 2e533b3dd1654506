/**
 * The result size cap (`maxToolResultBytes`): an oversized tool result is cut with a visible
 * marker, never passed whole, and never cut inside a UTF-8 character.
 */
import { TRUNCATION_MARKER } from '../prompts.js';

/**
 * What is left of a result after the cap, and how big it was.
 * @example
 * const { content, truncated, bytes }: CappedText = capBytes(result, 16_384);
 */
export interface CappedText {
  /** The text, or its longest whole-character prefix that fits, followed by the truncation marker. */
  content: string;
  truncated: boolean;
  /** UTF-8 size of the original text. */
  bytes: number;
}

/**
 * Cuts `text` so that it, with the truncation marker, fits in `maxBytes` of UTF-8 without splitting a
 * character. The marker is kept even when the limit is smaller than the marker itself.
 * @example
 * // 100 bytes of 'é' into 65: 7 bytes fit beside the marker, the 7th would split an 'é', so 6 are kept.
 * capBytes('é'.repeat(50), 65) // { content: 'ééé\n[loopstate: tool result truncated: kept 6 of 100 bytes]', truncated: true, bytes: 100 }
 */
export function capBytes(text: string, maxBytes: number): CappedText {
  const bytes = utf8Length(text);
  if (bytes <= maxBytes) return { content: text, truncated: false, bytes };
  const encoded = new TextEncoder().encode(text);
  // The marker's length depends on the kept count; sizing it with `bytes` is an upper bound.
  const room = Math.max(0, maxBytes - utf8Length(TRUNCATION_MARKER(bytes, bytes)));
  let kept = Math.min(room, encoded.length);
  // Back off while the first dropped byte continues a multi-byte character (10xxxxxx).
  while (kept > 0 && ((encoded[kept] ?? 0) & 0b1100_0000) === 0b1000_0000) kept -= 1;
  return {
    content: new TextDecoder().decode(encoded.subarray(0, kept)) + TRUNCATION_MARKER(kept, bytes),
    truncated: true,
    bytes,
  };
}

/**
 * The UTF-8 size of `text` without encoding it (every runtime has TextEncoder, not every one Buffer); a lone
 * surrogate counts as the 3 bytes of the U+FFFD that encoding writes for it.
 * @example
 * utf8Length('é🙂') // 6
 */
export function utf8Length(text: string): number {
  let bytes = 0;
  for (let index = 0; index < text.length; index++) {
    const unit = text.charCodeAt(index);
    if (unit < 0x80) bytes += 1;
    else if (unit < 0x800) bytes += 2;
    else if (
      unit >= 0xd800 &&
      unit <= 0xdbff &&
      index + 1 < text.length &&
      (text.charCodeAt(index + 1) & 0xfc00) === 0xdc00
    ) {
      bytes += 4;
      index += 1;
    } else bytes += 3;
  }
  return bytes;
}
