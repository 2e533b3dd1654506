/**
 * What the engine may ask of the runtime it runs in, probed rather than imported: the core runs in a browser,
 * Bun and Deno as in Node, so no `node:` module is imported; where a runtime offers Node's modules
 * (`process.getBuiltinModule`: Node ≥ 20.16, Bun, Deno) the few Node-only conveniences use them, and each says
 * plainly what it needs where they are missing.
 */

/** The part of a Node-like `process` the engine uses; every member may be missing. */
interface HostProcess {
  pid?: number;
  env?: Record<string, string | undefined>;
  kill?: (pid: number, signal: number) => unknown;
  getBuiltinModule?: (name: string) => unknown;
}

/**
 * The runtime's `process` when it has one (Node, Bun, Deno), else undefined (a browser, a worker).
 * @example
 * const pid = hostProcess()?.pid; // undefined in a browser
 */
export function hostProcess(): HostProcess | undefined {
  const candidate = (globalThis as { process?: unknown }).process;
  return typeof candidate === 'object' && candidate !== null ? (candidate as HostProcess) : undefined;
}

/**
 * A Node built-in module (`'node:fs'`), when the runtime hands them out synchronously; undefined elsewhere. Typed
 * by the caller with the members it uses: the engine never imports Node's types either.
 * @example
 * const os = nodeBuiltin<{ hostname(): string }>('node:os');
 */
export function nodeBuiltin<Module>(name: `node:${string}`): Module | undefined {
  const load = hostProcess()?.getBuiltinModule;
  if (typeof load !== 'function') return undefined;
  try {
    return (load(name) ?? undefined) as Module | undefined;
  } catch {
    return undefined;
  }
}
