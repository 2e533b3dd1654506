/**
 * The `signal` of a request, a tool's context or an evaluator's input, read from its source only when asked.
 *
 * Written as `{ ..., get signal() { return scope.signal } }`, every such object has a getter of its own: a new
 * closure, over the call and through it the whole run, described on V8's map of the object (maps live in the old
 * generation). Measured: each run then survived young collections until a full one, 3.5 KB a step promoted at
 * S = 10 (8.4 KB a run of one step), nearly all of what a short run keeps; with one shared getter, 1.1 (0.6). Here every object shares one
 * getter and finds its source in a hidden own property: the same own, enumerable `signal`, read from the source on each
 * read, as the object literal's getter was.
 */

/** Where each object given a `signal` here keeps what it reads it from: an own, non-enumerable property. */
const SOURCE = Symbol('loopstate.signalSource');
type Sourced = { readonly [SOURCE]?: { readonly signal: AbortSignal } };

/**
 * The one getter every such object shares (an object literal's `get signal()` would make one per object). It
 * reads the source through `this`, so a Proxy of the object, an object inheriting from it or a copy of its
 * property descriptors reads the signal too, as they did the literal's getter.
 */
const SIGNAL: PropertyDescriptor = Object.freeze({
  get(this: Sourced): AbortSignal | undefined {
    return this[SOURCE]?.signal;
  },
  enumerable: true,
  configurable: true,
});

/**
 * Gives `target` an own, enumerable `signal` that reads `source.signal` each time it is read (a lazy signal is
 * then made only if someone asks); returns `target`.
 * @example
 * const request = withSignal({ messages, tools }, scope); // request.signal is scope.signal, read when asked
 */
export function withSignal<Target extends object>(
  target: Target,
  source: { readonly signal: AbortSignal },
): Target & { readonly signal: AbortSignal } {
  Object.defineProperty(target, SOURCE, { value: source, configurable: true });
  Object.defineProperty(target, 'signal', SIGNAL);
  return target as Target & { readonly signal: AbortSignal };
}
