/** Describes whatever a user hook threw, without ever throwing itself (getters, Proxies, odd `toString`). */
export function describeThrown(value: unknown): string {
  try {
    if (value instanceof Error) return value.message || value.name;
    if (typeof value === 'string') return value;
    if (value === undefined) return 'undefined (nothing was thrown with it)';
    return String(value);
  } catch {
    return 'a value that could not be described';
  }
}
