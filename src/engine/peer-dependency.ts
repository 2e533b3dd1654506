/**
 * Adapters load their package (an optional peer dependency) when first used, through this: a package that is
 * not installed becomes a `MissingDependencyError` naming the install command, never a bare "Cannot find
 * module". Any other failure to load (a broken native build, say) is rethrown as it is.
 */
import { MissingDependencyError } from '../contracts/errors.js';

export interface PeerDependency {
  packageName: string;
  installCommand: string;
  /** What needs it, for the message: `sqliteStore`, `openaiModel`. */
  feature: string;
}

/** Whether `error` says that `packageName` itself (not one of its own imports) could not be found. */
export function isMissingPackage(error: unknown, packageName: string): boolean {
  if (typeof error !== 'object' || error === null) return false;
  const { code, message } = error as { code?: unknown; message?: unknown };
  if (code !== 'MODULE_NOT_FOUND' && code !== 'ERR_MODULE_NOT_FOUND') return false;
  // Node: "Cannot find module 'pg'" (require) or "Cannot find package 'pg' imported from …" (import).
  return typeof message === 'string' && (message.includes(`'${packageName}'`) || message.includes(`"${packageName}"`));
}

/**
 * Loads a peer with `load` (a `require` or an `import()` of it), turning "not installed" into `MissingDependencyError`.
 * @example
 * const Driver = loadPeer(() => require('better-sqlite3'), { packageName: 'better-sqlite3', installCommand: 'npm install better-sqlite3@~12.11', feature: 'sqliteStore' });
 */
export function loadPeer<Loaded>(load: () => Loaded, peer: PeerDependency): Loaded {
  try {
    return load();
  } catch (error) {
    if (isMissingPackage(error, peer.packageName)) throw new MissingDependencyError({ ...peer, cause: error });
    throw error;
  }
}

/** `loadPeer` for an asynchronous load (`() => import('openai')`). */
export async function loadPeerAsync<Loaded>(load: () => Promise<Loaded>, peer: PeerDependency): Promise<Loaded> {
  try {
    return await load();
  } catch (error) {
    if (isMissingPackage(error, peer.packageName)) throw new MissingDependencyError({ ...peer, cause: error });
    throw error;
  }
}
