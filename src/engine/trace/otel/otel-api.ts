/**
 * `@opentelemetry/api`, loaded by the first run rather than by `import 'loopstate'`: a process that never runs a
 * loop (the CLI's `verify`, a tool that only reads stores) does not pay its 17–29 ms load. The core may not use
 * Node's `createRequire`, so the load is a dynamic `import()` that `driveRun` awaits once; after it everything
 * here is synchronous. The API keeps its globals (a registered SDK) under a versioned symbol, so this is the
 * same registry an application's own import sees.
 */
import type * as OtelApi from '@opentelemetry/api';
import { thrownMessage } from '../../redaction/describe-thrown.js';

let api: typeof OtelApi | undefined;
let loading: Promise<void> | undefined;
let loadFailure: string | null = null;

/**
 * Loads the API once; a run awaits it only while it is not loaded yet. A failed load never rejects: the run's
 * OpenTelemetry sink is then left out with a warning (`openTraceSinks`), and the next run tries again.
 */
export function loadOtelApi(): Promise<void> | undefined {
  if (api !== undefined) return undefined;
  return (loading ??= import('@opentelemetry/api').then(
    (module) => {
      api = module;
      loadFailure = null;
    },
    (error: unknown) => {
      loadFailure = thrownMessage(error);
      loading = undefined;
    },
  ));
}

/** The API if loaded; else why its last load failed (or that none was tried). */
export function loadedOtelApi(): { api: typeof OtelApi } | { api: undefined; failure: string } {
  return api !== undefined ? { api } : { api: undefined, failure: loadFailure ?? 'it was not loaded before the run' };
}

/**
 * True when a copy of the API in this process has registered a global tracer or meter provider (an SDK). The API
 * keeps its globals under this symbol precisely so that every copy sees them: asked before ours is loaded.
 */
export function otelGlobalsRegistered(): boolean {
  const globals = (globalThis as Record<symbol, unknown>)[Symbol.for('opentelemetry.js.api.1')];
  return typeof globals === 'object' && globals !== null && ('trace' in globals || 'metrics' in globals);
}

/**
 * The OpenTelemetry API module, once loaded (an OpenTelemetry sink is only opened when it is).
 * @example
 * const provider = otelApi().trace.getTracerProvider();
 */
export function otelApi(): typeof OtelApi {
  if (api === undefined) throw new Error('internal: @opentelemetry/api read before it was loaded');
  return api;
}
