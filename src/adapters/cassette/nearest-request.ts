/**
 * Where a replayed request left the recording: the recorded request nearest to it and the first
 * field in which they differ, for an error a person can act on (`messages[3].content: recorded
 * "...", got "..."`) instead of two hashes.
 */
import type { PlainData } from './request-key.js';

/**
 * The first field two requests differ in, with both values shortened (`(absent)` when one lacks it).
 * @example
 * const difference: FieldDifference = { path: 'messages[3].content', recorded: '"shipped"', received: '"lost"' };
 */
export interface FieldDifference {
  path: string;
  recorded: string;
  received: string;
}

/** Shown values are cut to about this many characters. */
const SHOWN_CHARS = 80;
/** A long string is shown from a little before the first character that differs. */
const LEAD_CHARS = 24;
const ABSENT = '(absent)';
const IDENTIFIER = /^[A-Za-z_$][\w$]*$/;

type Comparable = PlainData | undefined;

function isRecord(value: Comparable): value is { [key: string]: PlainData } {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}

function childPath(path: string, key: string | number): string {
  if (typeof key === 'number') return `${path}[${key}]`;
  if (IDENTIFIER.test(key)) return path === '' ? key : `${path}.${key}`;
  return `${path}[${JSON.stringify(key)}]`;
}

/** Children of two values that are both arrays or both objects, in a stable order; null for leaves. */
function childKeys(recorded: Comparable, received: Comparable): (string | number)[] | null {
  if (Array.isArray(recorded) && Array.isArray(received)) {
    return Array.from({ length: Math.max(recorded.length, received.length) }, (_, index) => index);
  }
  if (isRecord(recorded) && isRecord(received))
    return [...new Set([...Object.keys(recorded), ...Object.keys(received)])].sort();
  return null;
}

function child(value: Comparable, key: string | number): Comparable {
  if (typeof key === 'number') return Array.isArray(value) ? value[key] : undefined;
  return isRecord(value) && Object.hasOwn(value, key) ? value[key] : undefined;
}

function sameLeaf(recorded: Comparable, received: Comparable): boolean {
  return recorded === received || JSON.stringify(recorded) === JSON.stringify(received);
}

/** Plain values in a value (at least one), so a missing message weighs more than one changed field of it. */
function leafCount(value: Comparable): number {
  if (Array.isArray(value))
    return Math.max(
      1,
      value.reduce((sum: number, item) => sum + leafCount(item), 0),
    );
  if (isRecord(value))
    return Math.max(
      1,
      Object.values(value).reduce((sum: number, item) => sum + leafCount(item), 0),
    );
  return 1;
}

/**
 * How many plain values differ between two requests, a field one of them lacks counting each value
 * in it. The nearest recorded request is the one with the fewest.
 * @example
 * countDifferences({ a: 1, b: [1, 2] }, { a: 2, b: [1] }) // 2
 */
export function countDifferences(recorded: Comparable, received: Comparable): number {
  if (recorded === undefined) return leafCount(received);
  if (received === undefined) return leafCount(recorded);
  const keys = childKeys(recorded, received);
  if (keys === null) return sameLeaf(recorded, received) ? 0 : 1;
  let count = 0;
  for (const key of keys) count += countDifferences(child(recorded, key), child(received, key));
  return count;
}

/**
 * The first differing field, depth first with object keys in sorted order (`messages` before
 * `tools`, array items by index), or null when the two are equal.
 * @example
 * firstDifference({ messages: [{ content: 'a' }] }, { messages: [{ content: 'b' }] }) // { path: 'messages[0].content', recorded: '"a"', received: '"b"' }
 */
export function firstDifference(recorded: Comparable, received: Comparable, path = ''): FieldDifference | null {
  const keys = childKeys(recorded, received);
  if (keys === null) {
    if (sameLeaf(recorded, received)) return null;
    const [shownRecorded, shownReceived] = shownPair(recorded, received);
    return { path: path === '' ? '(request)' : path, recorded: shownRecorded, received: shownReceived };
  }
  for (const key of keys) {
    const difference = firstDifference(child(recorded, key), child(received, key), childPath(path, key));
    if (difference !== null) return difference;
  }
  return null;
}

/** Both values shortened; two strings too long to show whole are shown from just before where they part. */
function shownPair(recorded: Comparable, received: Comparable): [string, string] {
  if (
    typeof recorded === 'string' &&
    typeof received === 'string' &&
    Math.max(recorded.length, received.length) > SHOWN_CHARS
  ) {
    let index = 0;
    while (
      index < recorded.length &&
      index < received.length &&
      recorded.charCodeAt(index) === received.charCodeAt(index)
    )
      index++;
    const from = index > LEAD_CHARS ? index - LEAD_CHARS : 0;
    return [shorten(recorded, from), shorten(received, from)];
  }
  return [shorten(recorded), shorten(received)];
}

/**
 * A value as JSON text of at most about 80 characters, optionally from a character offset of a string.
 * @example
 * shorten('a'.repeat(200)) // '"aaaa…" (200 chars)'
 */
export function shorten(value: Comparable, from = 0): string {
  if (value === undefined) return ABSENT;
  const text = typeof value === 'string' ? value : JSON.stringify(value);
  const fullLength = text.length;
  if (fullLength <= SHOWN_CHARS && from === 0) return typeof value === 'string' ? JSON.stringify(value) : text;
  const part = text.slice(from, from + SHOWN_CHARS);
  const quoted = typeof value === 'string' ? JSON.stringify(part).slice(1, -1) : part;
  const before = from > 0 ? '…' : '';
  const after = from + SHOWN_CHARS < fullLength ? '…' : '';
  const body = typeof value === 'string' ? `"${before}${quoted}${after}"` : `${before}${quoted}${after}`;
  return `${body} (${fullLength} chars)`;
}

/**
 * The recorded request nearest to `received`: the fewest differing fields, then the one recorded
 * closest to the replayed call's position (`ordinal`, 1-based), then the earlier one.
 * @example
 * nearestRecorded([first, second], received, 2) // { index: 1, difference: { path: 'messages[3].content', ... } }
 */
export function nearestRecorded(
  recorded: readonly PlainData[],
  received: PlainData,
  ordinal: number,
): { index: number; difference: FieldDifference | null } | null {
  let best: { index: number; count: number; distance: number } | null = null;
  recorded.forEach((request, index) => {
    const count = countDifferences(request, received);
    const distance = Math.abs(index + 1 - ordinal);
    if (best === null || count < best.count || (count === best.count && distance < best.distance))
      best = { index, count, distance };
  });
  if (best === null) return null;
  const { index } = best;
  return { index, difference: firstDifference(recorded[index], received) };
}
