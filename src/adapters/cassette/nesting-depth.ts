/**
 * How deep JSON data nests, found without recursion: the walkers that read a cassette (schema
 * validation, canonical JSON, the nearest-request diff, `structuredClone`) recurse, and a few thousand
 * levels overflow their stack with a bare `RangeError`. Checking the depth first turns that into an
 * error that names the field.
 */

/** Path segments shown before the rest of a too-deep path is cut to `…`. */
const SHOWN_SEGMENTS = 6;
const IDENTIFIER = /^[A-Za-z_$][\w$]*$/;

interface Frame {
  value: unknown;
  depth: number;
  path: string;
  segments: number;
}

function segment(key: string | number): string {
  if (typeof key === 'number') return `[${key}]`;
  return IDENTIFIER.test(key) ? `.${key}` : `[${JSON.stringify(key)}]`;
}

/**
 * The path of the first array or object nested more than `maxDepth` levels deep (the top level is
 * depth 1), shortened after a few segments, or null when none is. Iterative, so any depth is safe.
 * @example
 * tooDeepAt({ a: [[1]] }, 2) // 'a[0]'
 */
export function tooDeepAt(value: unknown, maxDepth: number): string | null {
  const stack: Frame[] = [{ value, depth: 1, path: '', segments: 0 }];
  for (let frame = stack.pop(); frame !== undefined; frame = stack.pop()) {
    if (frame.value === null || typeof frame.value !== 'object') continue;
    if (frame.depth > maxDepth) return frame.path.replace(/^\./, '') || '(top level)';
    const entries: [string | number, unknown][] = Array.isArray(frame.value)
      ? frame.value.map((item, index) => [index, item])
      : Object.entries(frame.value);
    // Pushed in reverse, so the first child is walked first and the path named is the first one in the file.
    for (let index = entries.length - 1; index >= 0; index--) {
      const [key, child] = entries[index] as [string | number, unknown];
      if (child === null || typeof child !== 'object') continue;
      const shown = frame.segments < SHOWN_SEGMENTS;
      const path = shown ? `${frame.path}${segment(key)}` : frame.path.endsWith('…') ? frame.path : `${frame.path}…`;
      stack.push({ value: child, depth: frame.depth + 1, path, segments: frame.segments + 1 });
    }
  }
  return null;
}
