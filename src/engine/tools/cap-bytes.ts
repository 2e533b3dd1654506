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
  const bytes = Buffer.byteLength(text, 'utf8');
  if (bytes <= maxBytes) return { content: text, truncated: false, bytes };
  const encoded = Buffer.from(text, 'utf8');
  // The marker's length depends on the kept count; sizing it with `bytes` is an upper bound.
  const room = Math.max(0, maxBytes - Buffer.byteLength(TRUNCATION_MARKER(bytes, bytes), 'utf8'));
  let kept = Math.min(room, encoded.length);
  // Back off while the first dropped byte continues a multi-byte character (10xxxxxx).
  while (kept > 0 && ((encoded[kept] ?? 0) & 0b1100_0000) === 0b1000_0000) kept -= 1;
  return { content: encoded.subarray(0, kept).toString('utf8') + TRUNCATION_MARKER(kept, bytes), truncated: true, bytes };
}
