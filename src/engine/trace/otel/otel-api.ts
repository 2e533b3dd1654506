/**
 * `@opentelemetry/api`, loaded by the first run rather than by `import 'loopstate'`: a process that never runs a
 * loop (the CLI's `verify`, a tool that only reads stores) does not pay its 17–29 ms load. The core may not use
 * Node's `createRequire`, so the load is a dynamic `import()` that `driveRun` awaits once; after it everything
 * here is synchronous. The API keeps its globals (a registered SDK) under a versioned symbol, so this is the
 * same registry an application's own import sees.
 */
import type * as OtelApi from '@opentelemetry/api';

let api: typeof OtelApi | undefined;
let loading: Promise<unknown> | undefined;

/** Loads the API once; a run awaits it only while it is not loaded yet. */
export function loadOtelApi(): Promise<unknown> | undefined {
  if (api !== undefined) return undefined;
  return (loading ??= import('@opentelemetry/api').then((module) => (api = module)));
}

/**
 * The OpenTelemetry API module, once `loadOtelApi()` has settled (every run's trace sinks open after it).
 * @example
 * const provider = otelApi().trace.getTracerProvider();
 */
export function otelApi(): typeof OtelApi {
  if (api === undefined) throw new Error('internal: @opentelemetry/api read before loadOtelApi() settled');
  return api;
}
