/**
 * The identity of a tool call for the repeated-call signal.
 */
import { canonicalJson } from './canonical-json.js';

/**
 * `name:canonical-json(args)`. Pass the parsed arguments when they are valid JSON (so key order
 * and whitespace do not matter) and the raw text otherwise (it is then quoted, so it never
 * collides with a parsed value).
 * @example
 * toolCallFingerprint('get_order', { order_id: 'O-1', verbose: true }) // 'get_order:{"order_id":"O-1","verbose":true}'
 */
export function toolCallFingerprint(name: string, args: unknown): string {
  return `${name}:${canonicalJson(args)}`;
}
